// Package snapcache keeps the broker's sealed memfd snapshots of
// executables (internal/snapshot), so that an executable run again and
// again is copied and hashed once. Entries are keyed by the source file's
// full fstat identity and its SHA-256, so a file that changed in any way —
// content, inode, mode, owner, times — never hits an old snapshot; a
// snapshot whose content does not hash to the approved digest is
// IDENTITY_DRIFT. The cache is bounded by entry count and total bytes
// (least recently used first out), and every caller gets its own
// duplicate descriptor, so eviction never closes a snapshot in use; as all
// of them share one inode, every hit re-checks the snapshot's mode and
// seals, so one action's change to its copy never reaches the next. The
// launcher re-checks the seals and the digest of whatever it is handed.
//
// macOS has no fexecve: the cache there is empty and the binding is
// unbound.
package snapcache
