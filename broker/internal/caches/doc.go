// Package caches keeps the persistent per-workspace caches: one directory
// per workspace identity, reused by every action of that workspace and by
// no other, so that build tools stop starting from an empty cache at every
// action (issue 14 §4).
//
// # Layout
//
//	<state>/caches/<key>/            0700, the broker's only
//	<state>/caches/<key>/workspace   JSON: the workspace's identity, its path as last seen, the last use (to the minute)
//	<state>/caches/<key>/data/       0700, the action's read-write path (wire.Policy.ReadWrite)
//	    xdg/ go-build/ go-mod/ npm/ pip/ cargo-home/ gradle/ [cargo-target/]
//
// key is the first 16 bytes, in hex, of the SHA-256 of the workspace's
// (dev, ino, birth time): the same directory, under whatever path, gets
// the same cache, and a directory created later in a freed inode (ext4
// reuses them at once) gets another one. The variables every action of
// the workspace gets (Env) point into data/: XDG_CACHE_HOME=data/xdg,
// GOCACHE=data/go-build, GOMODCACHE=data/go-mod, npm_config_cache=
// data/npm, PIP_CACHE_DIR=data/pip, CARGO_HOME=data/cargo-home (cargo's
// registry, git checkouts and locks; never ~/.cargo, which holds
// credentials.toml), GRADLE_USER_HOME=data/gradle and, only when the
// operator asks (`--cargo-target-cache`), CARGO_TARGET_DIR=
// data/cargo-target; and UV_LINK_MODE=copy, so that uv copies what it
// installs from its cache (XDG_CACHE_HOME/uv) instead of hard linking
// it into the workspace.
//
// # Threat model
//
// The target can write anything beneath data/ — that is the point — so
// the cache is shared state between the actions of one workspace, and
// one action can poison what the next one builds from: the approval card
// says so. Nothing beneath data/ is trusted by the broker: the use record
// lives beside data/, where no target reaches (Landlock grants data/ and
// what lies beneath it, and renaming data/ itself would need a right on
// its parent); List walks data/ without following symlinks or opening
// anything but directories; Remove works by descriptor, never follows a
// symlink, and gives a directory the target left read-only (Go's module
// cache is) its owner's write and search bits back through its own
// descriptor before emptying it (internal/rmtree, which also removes the
// actions' private directories). Removal is the operator's (Prune,
// `broker caches prune`), with no broker running (the state lock), so
// no action is using a cache while it goes.
//
// A program built into a cache (CARGO_TARGET_DIR) cannot be an action's
// executable: its directory lies inside the state directory, which
// policy.For withholds.
//
// A pruned cache is made anew at the next submit, in a new inode: the
// policy pins its read-write path by (dev, ino), so leases approved for
// the old one no longer match and the next run of that workspace asks
// for approval again.
package caches
