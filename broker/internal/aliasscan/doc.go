// Package aliasscan checks, before anything is asked or consumed, that
// the workspace holds no second name of something that lives outside the
// writable scope (issue 13 §4, issue 31 §4; docs/architecture.md §2.2).
// Landlock is path-based: a file in the workspace that is a hard link to,
// say, ~/.bashrc is written through with the workspace's rights, a hard
// link to a device node or FIFO outside reaches that device or its
// readers (and the metadata server would chmod it), and a mount point
// inside the workspace makes a whole other place writable. The broker
// refuses such a workspace with WORKSPACE_ALIASED.
//
// Check is what the submit driver calls, with the workspace and the rest
// of its writable scope (its cache, the policy's read-write paths); Scan
// is the walk itself.
//
// # How
//
// The walk is by descriptor only. The root is the workspace descriptor
// identity resolved (O_PATH on Linux), reopened with
// openat(fd, ".", O_RDONLY|O_DIRECTORY). Each directory is listed with
// getdents64 (os.File.Readdirnames, which stats nothing), each name
// stat'ed with statx(dirfd, name, AT_SYMLINK_NOFOLLOW|AT_NO_AUTOMOUNT)
// (fstatat on macOS), and a directory is entered only through
// openat(dirfd, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC), whose
// stat must give the (dev, ino) and mount the first stat gave. Nothing
// else is ever opened: a symlink, FIFO, socket or device is only
// stat'ed.
//
// Mount points: every name must be on its root's mount (statx's mount
// id, Linux 5.8: a kernel that does not report it fails the scan; on
// macOS the device, so a mount that reports the same device would not
// be seen). A name on another mount (a directory or file bind-mounted there, or
// any filesystem mounted there) is a *MountError, and the check refuses
// the workspace whole: it must be one filesystem with no mounts inside.
// The comparison costs no system call beyond the stat every name gets.
//
// For each non-directory with nlink > 1 — regular file, symlink, FIFO,
// socket, device — the walk counts the names it finds inside the tree
// per (dev, ino). When the link count is larger than the names found,
// the other directories of the scope are walked the same way (same
// bounds, the same deadline), counting the names of those files only,
// and only until every one is accounted for. A file whose link count is
// still larger has a name outside the scope: every name of it inside the
// tree is reported as aliased. A file all of whose names lie in the
// scope is harmless and passes: the objects `git clone` hard-links from
// a repository in the same workspace, and the packages uv hard-links
// from its cache ($XDG_CACHE_HOME/uv, the workspace's cache) into
// .venv.
//
// # Invariants
//
//   - Never a half result: a scan that cannot finish (a limit reached,
//     a directory it cannot open or list, a name it cannot stat, a
//     directory swapped while it was entered) returns an error and no
//     Result, and the submit is refused.
//   - Bounded: at most MaxEntries names in each tree (all kinds, counted
//     as they are listed, before they are stat'ed), at most MaxDepth
//     directory levels below its root (the walk holds one descriptor per
//     level), and at most MaxDuration on the monotonic clock for the
//     whole check; over any of them is a *LimitError that names the
//     limit. A cache over the bounds refuses only a workspace with a
//     link into it: the cache is not read when every name is in the
//     workspace.
//   - Symlinks are never followed and nothing but directories is
//     opened, so a FIFO cannot block the walk, a socket or device is
//     never touched, and a symlink loop is one stat.
//   - No mount is crossed, so no directory is reached twice and no cycle
//     can form. Names are counted once: a scope directory that holds the
//     workspace or lies in it fails the scan, and scope directories that
//     nest are walked once.
//   - A name that vanishes between listing and its stat or openat
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
// writable scope into it fails with EXDEV (tested in integration), and
// it cannot mount. Links between the workspace and its cache, which
// targets can make, stay in the scope. The cache is shared between the
// actions of one workspace by design (broker/internal/caches).
//
// These checks are not the sandbox boundary; they close the gap that a
// path-based boundary leaves for files it cannot tell apart.
package aliasscan
