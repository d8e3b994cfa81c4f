// Package identity is the first room of the broker's pipeline: admission
// of the closed request shape (Admit), and resolution of an admitted
// request into its exact CommandIdentity (Resolve) — the executable found
// on the sanitized PATH or by absolute path with every symlink on the way
// recorded, opened without following any, measured by fstat and a
// bounded SHA-256; a "#!" script's interpreter pinned the same way
// ("#!/usr/bin/env NAME" pinned as NAME, since env is never run); the
// workspace opened by fd with openat2 RESOLVE_NO_SYMLINKS|NO_MAGICLINKS
// and the cwd beneath it with RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS|
// NO_XDEV; then the fingerprint, the SHA-256 of the canonical CBOR of the
// whole identity.
//
// A workspace executable — a relative path with a slash, like ./gradlew,
// .venv/bin/python or node_modules/.bin/jest (wire.WorkspaceExecutable) —
// is resolved from the workspace root (not the cwd) one component at a
// time, each opened from the workspace descriptor with openat2
// RESOLVE_BENEATH|NO_SYMLINKS (workspace.go), every symlink recorded by
// its absolute path. A link that leads out of the workspace continues as
// an absolute path does, and policy.For allows such a target only under
// the read paths. The file's path is the workspace's (opened without
// symlinks) joined with symlink-free components, so the launcher can
// re-open it by path with RESOLVE_NO_SYMLINKS; argv[0] stays what was
// requested.
//
// Input is a wire.Submit; output is a sealed Resolved value, which only
// Resolve makes, holding the identity and the descriptors every fact was
// measured on. The environment and the policy are inputs (the broker's
// allowlisted environment and broker/internal/policy's decision for the
// executable), so that the fingerprint covers them without this package
// depending on the rooms after it.
//
// # Threat model
//
// The request comes from a same-uid agent that may be hostile or confused,
// and the workspace contents are hostile: nothing is followed, a FIFO
// planted where the executable should be does not block (O_NONBLOCK, then
// refused), files over 512 MiB are refused, and a file that changes while
// it is measured is IDENTITY_DRIFT. Argv elements are literal bytes: there
// is no shell anywhere. These checks are not the boundary — the launcher
// re-verifies every identity by descriptor before exec and the kernel
// enforces the policy.
//
// Directory identities (wire.DirIdentity) include the birth time, so the
// fingerprint covers it: ext4 reuses a freed inode number at once, and
// rm + mkdir of the cwd gives the same (dev, ino, mnt_id).
//
// # Authority outside every workspace
//
// The whole workspace is writable by the target, so right after the
// workspace is opened Resolve refuses (PATH_INVALID, with a sentence
// naming the overlap) any workspace that overlaps a Protected place
// (protect.go). The broker names the places and builds the set once, at
// Open: the state directory and its keys/, run/ (the sockets) and
// actions/, and the directories of the broker and launcher binaries
// (Overlap: the workspace may not be, contain or lie inside them); / and
// the home directory (Itself: a subdirectory is fine); the system roots
// and the configured read paths (ItOrAbove: /var/www, /usr/local/src stay
// allowed); /proc, /sys, /dev (ItOrBelow). The comparison is by directory
// identity (dev, ino), never by path: each place is held open by
// descriptor, and "contains" and "lies inside" are found by opening ".."
// from a descriptor up to the root, so a symlinked spelling of a place, a
// bind mount of it (same dev and ino), or a place renamed since Open is
// still found. The check holds at resolution; the launcher uses the
// workspace by the same descriptor. A process outside the sandbox that
// later moves a protected place beneath an approved workspace is not
// stopped (it already holds that authority itself).
//
// macOS has no openat2: paths are opened with O_NOFOLLOW_ANY and a device
// check stands in for RESOLVE_NO_XDEV (open_darwin.go).
package identity
