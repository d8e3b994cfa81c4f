// Package statedir is the broker's state directory on disk: its layout
// (docs/architecture.md §3.3), made private and owned by the broker's
// uid; the lock that makes one broker its only user; the receipt keys
// kept in it; and the operator's files in it, read under one rule.
//
//	statedir.go    Dirs (the layout), Default, Prepare, Lock and Take
//	flock_unix.go  the flock on <state>/lock, and a file's owner
//	keys.go        the receipt signing and output HMAC keys: made at a
//	               broker's first start, only read by a reader
//	operator.go    ReadOperatorFile: <state>/env and <state>/bindings are
//	               regular files of the broker's uid that no one else may
//	               write, bounded in size
//
// # Invariants
//
//   - Every directory of the layout is 0700 and the broker's: one with
//     another owner is refused, one with wider permissions narrowed.
//   - One broker per state directory: an exclusive, non-blocking flock,
//     which the kernel drops when the process dies (no stale lock).
//   - A reader never creates a key (ExistingKeys): a key no broker
//     minted would verify nothing.
//
// Whatever a broker makes beneath the layout belongs to its own room:
// the journal (broker/internal/journal), the actions' private
// directories (broker/internal/actiondirs), the caches
// (broker/internal/caches), live output's spills (broker/internal/follow).
package statedir
