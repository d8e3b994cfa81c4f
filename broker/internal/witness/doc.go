// Package witness keeps a witness: an append-only file outside the state
// directory to which the broker copies every signed checkpoint after the
// transaction that stored it commits (`broker serve --witness DIR`).
// Whoever can rewrite the state directory can cut the log and its
// checkpoints together; the witness file keeps the checkpoints where
// `broker receipts verify --checkpoint FILE` can hold the log to them.
//
//	witness.go  File, Open, Witness.Write (after each committed append),
//	            and LastNote and CheckpointSize, with which `broker
//	            status` (the broker root's ReadWitness) compares the file
//	            with the log
//
// The file is DIR/File(key): checkpoints of one key only, each a signed
// note followed by an empty line, written with one write(2) on a
// descriptor opened O_APPEND|O_NOFOLLOW and fsync'd. Its mode is 0644:
// checkpoints are meant to be published, and hold no secret. O_APPEND
// stops no one with the broker's uid from truncating the file; to make
// it append-only for the broker too, the operator sets it so (`chattr
// +a` on Linux, `chflags sappnd` on macOS, both as root) or points DIR at
// storage the broker's uid cannot rewrite.
//
// A DIR inside the state directory, one that does not exist, or a file
// that cannot be opened or brought up to date at start stops Open, and
// so the broker's Open. A failed write does not block the append whose
// checkpoint it copies (the journal already holds that checkpoint,
// committed): it is logged, recorded in the journal's witness reports,
// and shown by `broker status`. The next write that succeeds copies the
// newest checkpoint, which covers every entry an earlier one did, so the
// witness loses only the intermediate sizes.
package witness
