// Package rmtree removes a directory tree that a target wrote, whatever
// it made of it: by descriptor, never following a symlink, and giving
// each directory its owner's read, write and search bits back (through
// its own descriptor) before emptying it, so that a directory the target
// made mode 0 or read-only (Go's module cache is) is removed like any
// other. Used for the persistent caches (broker/internal/caches) and the
// actions' private HOME and TMPDIR (broker/internal/actiondirs).
//
// It removes only what the caller's uid may: an entry another user owns
// inside a directory it cannot write stops the removal with an error
// naming the entry. A tree deeper than MaxDepth directories is left in
// place and reported.
package rmtree
