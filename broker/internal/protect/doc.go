// Package protect watches the files inside a workspace that the user's own
// unconfined tools run or obey later — git hooks and config, .gitmodules,
// direnv's .envrc, editor and devcontainer directories, husky's and
// .githooks hook directories, every submodule gitdir's hooks and config,
// and a linked worktree's gitdir when it lies in the workspace. A
// core.hooksPath naming another directory is not followed; a change to
// the config that sets it is detected. A target may write
// them (they are inside the writable scope); warrant cannot make them
// read-only without a mount namespace (see launcher/linux/doc.go), so it
// detects instead: the broker records every protected entry's state
// (content digest and mode, symlink target digest, directory mode, or
// absence) before the launch and again once the whole group is gone, and
// every difference goes into the receipt, `broker run`'s output and
// --json. Detected, never called prevented.
//
// Reading is by descriptor beneath the workspace (openat2
// RESOLVE_BENEATH|NO_SYMLINKS): nothing is followed, no FIFO or device is
// opened, and a bounded snapshot (10,000 entries, 64 MiB hashed, 16 MiB a
// file) records what it could not read as "unchecked", which Diff always
// reports, so nothing unread is claimed unchanged.
package protect
