// Package protect guards the files inside a workspace that the user's own
// unconfined tools run or obey later: what git reads of every repository
// in the workspace, direnv's .envrc, editor and devcontainer directories,
// hook directories, and coding agents' configuration (Paths). A target
// may write them (they are inside the writable scope), so the broker
// records every protected entry's state (content digest and mode,
// symlink target digest, directory mode, or absence) before the launch
// and again once the whole group is gone, and every difference goes into
// the receipt, `broker run`'s output and --json. Where the launcher can
// make a private mount namespace, Binds (binds.go) names the entries it
// binds read-only (or pins) so that those writes fail; what is not bound
// (created, outside the workspace, reached through a symlink, past the
// bound) is detected only.
//
// # What git reads (git_linux.go)
//
// Take searches the whole workspace (discover_linux.go: by descriptor,
// nothing followed, within the alias scan's bounds) for repositories: each directory
// holding a .git entry and each bare gitdir (HEAD, objects/, refs/). It
// resolves them as git's setup.c does: a .git directory is the gitdir, a
// gitfile ("gitdir: PATH") and a symlink redirect it; the gitdir's
// commondir file names the common dir; .git/worktrees/* and
// .git/modules/* are gitdirs too. In each gitdir and common dir, wherever
// it lies (outside the workspace by its absolute path, such as a gitdir
// the target made in its persistent cache), GitEntries are protected:
// hooks/, config, info/, commondir, gitdir, config.worktree. A file or
// directory outside the workspace is recorded by what stat shows (size,
// times, mode), never by its contents or the names in it, which may be
// the broker's alone to read:
// what such a file would set (a config's hooksPath and includes, a
// commondir or gitfile's target) is unchecked, and the redirection
// pointing there is what is listed. The config (and config.worktree when
// it sets extensions.worktreeConfig) is parsed (gitconfig.go: git's
// grammar, 1 MiB, only core.hooksPath and include paths) so that the
// core.hooksPath directory and every included file are protected as well;
// each file is read once a snapshot and parsed once a repository, its
// effect memoised (an include cycle, git's depth exceeded, is unchecked),
// at most 1,024 files and 16 MiB a snapshot. The broker reads the
// operator's git identity with the same parser (GitConfig). Beside each
// redirection a resolution entry ("sub/.git (resolves to)",
// ".git/config (core.hooksPath)") records where it leads, quoted, and
// says when that is outside the workspace; a config value is never
// echoed: a hooksPath outside the workspace is recorded by its digest
// ("value sha256:…"). A redirection made or changed during the run is
// listed with its destination, and a later run compares the
// destination's own state, so an unchanged redirection lists nothing. A
// symlink inside a protected directory is followed to what it names, as
// git or an editor would, within the workspace (and outside it for git's
// entries and hook directories); at most 64 a snapshot.
//
// Paths resolved from file contents follow symlinks the way the kernel
// does, one component at a time by lstat and readlink (resolve_linux.go);
// every entry is then read with openat2 RESOLVE_NO_SYMLINKS (beneath the
// workspace for a path in it), so a symlink swapped in since is
// unchecked, never followed. A file is opened to read only after fstat
// of an O_PATH descriptor shows a regular file, and then through that
// descriptor (/proc/self/fd), so no FIFO or device is ever opened.
//
// # Bounds and honesty
//
// A snapshot holds at most 10,000 entries, 64 MiB hashed, 16 MiB a file,
// 256 gitdirs; what it could not read or reach is "unchecked", which
// Diff always lists, so nothing unread is claimed unchanged (the search
// past its bounds is the entry ScanBound). An entry first recorded after
// the run is "unchecked" before it, except in a repository that the
// complete search proved absent (and is not listed when absent after).
// Diff's listing (list.go) puts git first, its resolution entries
// leading, then hook directories, agent configuration, direnv, editors;
// every root with a change is named, each within a share of at most 32
// lines (the rest counted on one line), and the list within
// wire.MaxProtectedChanges.
//
// .gitattributes is not protected: it can name a filter or diff driver,
// but the driver's command comes only from a config file, which is.
// Remaining: an include.path or core.hooksPath with "~user/" or
// "%(prefix)/" is unchecked; a repository reachable only through a
// symlinked directory is not searched; a change undone before the group
// is gone is not seen.
package protect
