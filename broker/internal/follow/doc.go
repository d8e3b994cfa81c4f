// Package follow fans each action's redacted output out to the clients
// that follow it (the agent socket's Follow request), as the stream
// recorders release it (runner.Options.Live), losing no byte to a slow
// follower.
//
// # Offsets, claims and the spill
//
// Every byte is named by its offset in its stream's redacted output, the
// stream the receipt digests. A follower (Sub) is an offset per stream:
// the next byte it is to be sent. Publish never waits for one. Each
// stream keeps its latest Window bytes in memory (a window starts at
// 64 KiB and grows as needed; all together at most MaxMemory, past which
// a window grows no more); a byte leaving the window while a claim still
// needs it is written to the stream's spill file, <dir>/<handle>/<stream>
// (SpillTo), and a follower that is behind is sent it from there.
//
// A claim is what someone still needs: a follower's offsets, and the
// Resume bytes before them, which it may have been sent and not printed
// when it was cut off; those of a follower that left before it had
// everything (a client killed, a connection dropped, a page returned:
// Limit), parked until someone takes them over by following from at or
// before them (Subscribe), or ParkLinger after the end; and the hold, a
// claim from byte 0 for the first follower, up to HoldBytes per stream,
// until someone follows or Linger after the end. Nothing else is
// spilled: an action no one follows writes at most HoldBytes per stream
// to disk, a follower that keeps up none.
//
// # Bounds
//
// Memory: MaxMemory of windows, a MaxChunkData read buffer per
// follower, and a few offsets per claim. Disk: a stream's spill file
// never extends past MaxSpill bytes, the longest profile's hard output
// budget, which ends the group first; a spill is emptied as soon as no
// claim needs it, removed with its action's entry (when the action has
// ended and no one follows it or will come back for it) and all of them
// by Close and at the next SpillTo, so no spill outlives its broker. A
// byte no one holds any more — past a bound, after a failed write, past
// the hold for a follower that came late, or once a parked claim
// expired — is sent as a gap (Part.NotStreamed) at its offset: the
// follower learns exactly which range it missed. The output is never
// lost from the evidence: the receipt digests every byte and retains its
// head and tail.
//
// The hub knows nothing of the journal: the broker tells it when an
// action has ended (End), after the end is recorded, and a follower
// learns it from Next.
package follow
