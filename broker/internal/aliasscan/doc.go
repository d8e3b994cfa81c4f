// Package aliasscan checks, before anything is asked or consumed, that
// the workspace holds no second name of a file that lives outside it
// (issue 13 §4; docs/architecture.md §2.2). Landlock is path-based: a
// regular file in the workspace that is a hard link to, say, ~/.bashrc
// is written through with the workspace's rights. The broker refuses
// such a workspace with WORKSPACE_ALIASED.
//
// Check is what the submit driver calls; Scan is the walk itself.
//
// # How
//
// The walk is by descriptor only. The root is the workspace descriptor
// identity resolved (O_PATH on Linux), reopened with
// openat(fd, ".", O_RDONLY|O_DIRECTORY). Each directory is listed with
// getdents64 (os.File.Readdirnames, which stats nothing), each name
// stat'ed with fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW), and a
// directory is entered only through openat(dirfd, name,
// O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC), whose fstat
// must give the (dev, ino) the fstatat gave. Nothing else is ever
// opened: a symlink, FIFO, socket or device is only stat'ed.
//
// For each regular file with nlink > 1 the walk counts the names it
// finds inside the tree per (dev, ino). When the link count is larger
// than the names found, a name lies outside: every name of that file
// inside the tree is reported as aliased. A file all of whose names lie
// inside (the objects `git clone` hard-links from a repository in the
// same workspace) is harmless and passes.
//
// # Invariants
//
//   - Never a half result: a scan that cannot finish (a limit reached,
//     a directory it cannot open or list, a name it cannot stat, a
//     directory swapped while it was entered) returns an error and no
//     Result, and the submit is refused.
//   - Bounded: at most MaxEntries names (all kinds, counted as they are
//     listed, before they are stat'ed), at most MaxDepth directory
//     levels below the root (the walk holds one descriptor per level),
//     and at most MaxDuration on the monotonic clock; over any of them
//     is a *LimitError that names the limit.
//   - Symlinks are never followed and nothing but directories is
//     opened, so a FIFO cannot block the walk, a socket or device is
//     never touched, and a symlink loop is one stat.
//   - A directory reached twice (a bind mount of a directory inside the
//     tree onto another place in it) is walked once, so its names are
//     counted once and no cycle can form.
//   - A name that vanishes between listing and fstatat or openat
//     (ENOENT) is skipped: it is no longer a name in the tree.
//
// # Threat model
//
// The workspace contents are hostile and may be changed by processes
// outside any sandbox while the scan runs. The scan proves a fact about
// the tree as it was walked, not about the tree during the run: a
// process outside the sandbox can plant a link after the scan, and a
// concurrent rename during the scan can hide a name or count one twice.
// The approval card says so. Targets themselves cannot plant one: the
// launcher handles Landlock's REFER right, so a link() from outside the
// writable scope into it fails with EXDEV (tested in integration). Other kinds of files with several names (symlinks,
// devices, FIFOs) are not checked: writing to them does not write to a
// file elsewhere. A directory bind-mounted into the workspace is
// writable there by design of the mount, not by an alias, and is not
// detected.
//
// These checks are not the sandbox boundary; they close the gap that a
// path-based boundary leaves for files it cannot tell apart.
package aliasscan
