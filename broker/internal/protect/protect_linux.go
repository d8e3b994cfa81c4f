package protect

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Take records the protected entries of the workspace open as ws, by
// descriptor: Paths, and what git reads of every repository beneath it
// (git.go). Nothing is opened through a symlink (a symlink is recorded as
// one, and where it resolves is resolved and recorded on its own), and
// no FIFO or device is opened.
func Take(ws *os.File) *Snapshot {
	fd, err := unix.FcntlInt(ws.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return &Snapshot{entries: map[string]string{".": Unchecked}}
	}
	return take(os.NewFile(uintptr(fd), ws.Name()), nil)
}

// take records git's entries first (so that the entry bound meets them
// last), then Paths and also (for Again) every root, repository and
// gitdir prev recorded, so that an entry is never reported deleted only
// because what made it a root went away.
func take(ws *os.File, prev *Snapshot) *Snapshot {
	s := &Snapshot{ws: ws, fd: int(ws.Fd()), rooted: map[string]int{}, entries: map[string]string{}, rootOf: map[string]int{}, cfgs: map[string]cfgFile{}}
	if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", s.fd)); err == nil && path.IsAbs(p) {
		s.wsPath = p
	}
	s.git(prev)
	if prev != nil {
		prev.notThere(s.tops)
	}
	for _, p := range Paths {
		s.add(root{path: strings.TrimSuffix(p, "/"), kind: kindOf(p)})
	}
	if prev != nil {
		for _, r := range prev.roots {
			if !r.pseudo {
				r.typ = 0
				s.add(r)
			}
		}
	}
	for i := 0; i < len(s.roots); i++ { // symlinks followed add roots as they are recorded
		if !s.roots[i].pseudo {
			s.entry(s.roots[i].path, i)
		}
	}
	return s
}

// notThere records in s, a snapshot whose search for repositories was
// complete, that each repository found since (at a top s did not find,
// beneath no gitdir s skipped) had no .git entry when s was taken: what
// lies in its gitdir is then listed as created, not as unchecked.
func (s *Snapshot) notThere(tops []string) {
	if _, partial := s.entries[ScanBound]; partial {
		return
	}
	for _, t := range tops {
		skipped := slices.ContainsFunc(s.gitdirs, func(g gitdir) bool { return t == g.loc || strings.HasPrefix(t, g.loc+"/") })
		if slices.Contains(s.tops, t) || skipped || path.IsAbs(t) || slices.Contains(strings.Split(t, "/"), ".git") {
			continue
		}
		for _, k := range []string{path.Join(t, ".git"), path.Join(t, ".git") + resolvesTo} {
			if _, ok := s.entries[k]; !ok {
				s.entries[k] = Absent
			}
		}
	}
}

// kindOf is the listing kind of one of Paths.
func kindOf(p string) kind {
	switch p {
	case ".gitmodules", ".gitconfig":
		return kindGit
	case ".husky/", ".githooks/":
		return kindHooks
	case ".claude/", ".mcp.json", ".codex/", ".cursor/", ".agents/":
		return kindAgent
	case ".envrc":
		return kindShell
	}
	return kindEditor
}

// add makes r a root, once per path; it returns its index. A root found
// again without a symlink is no longer linked.
func (s *Snapshot) add(r root) int {
	if i, ok := s.rooted[r.path]; ok {
		if !r.linked {
			s.roots[i].linked = false
		}
		return i
	}
	s.roots = append(s.roots, r)
	s.rooted[r.path] = len(s.roots) - 1
	return len(s.roots) - 1
}

// pseudo records a resolution entry.
func (s *Snapshot) pseudo(key, state string) {
	i := s.add(root{path: key, kind: kindGit, pseudo: true})
	if _, ok := s.entries[key]; !ok {
		s.set(key, i, state)
	}
}

func (s *Snapshot) set(loc string, root int, state string) {
	s.entries[loc] = state
	s.rootOf[loc] = root
}

// Again records the same workspace's protected entries anew, for Diff,
// and releases s.
func (s *Snapshot) Again() *Snapshot {
	ws := s.ws
	if ws == nil {
		return &Snapshot{entries: map[string]string{".": Unchecked}}
	}
	s.ws = nil
	after := take(ws, s)
	after.ws = nil
	ws.Close()
	return after
}

// Release closes the workspace s holds, when it was not needed again.
func (s *Snapshot) Release() {
	if s.ws != nil {
		s.ws.Close()
		s.ws = nil
	}
}

// onOpen, when a test sets it, sees every location opened for more
// than its path (to read it or list it).
var onOpen func(loc string)

// open opens loc without following any symlink: beneath the workspace
// when it is relative, from the root when it is absolute (outside).
func (s *Snapshot) open(loc string, flags int) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if onOpen != nil && flags&unix.O_PATH == 0 {
		onOpen(loc)
	}
	dir := s.fd
	if path.IsAbs(loc) {
		dir = unix.AT_FDCWD
	} else {
		how.Resolve |= unix.RESOLVE_BENEATH
	}
	return unix.Openat2(dir, loc, how)
}

// typeOf is loc's file type, nothing followed; 0 when it cannot be read.
func (s *Snapshot) typeOf(loc string) uint32 {
	fd, err := s.open(loc, unix.O_PATH)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Mode & unix.S_IFMT
}

// entry records loc under root i and, for a directory, everything
// beneath it (not for a gitdir's own directory); a symlink is followed
// to where it resolves, which becomes a root of its own.
func (s *Snapshot) entry(loc string, i int) {
	if v, done := s.entries[loc]; done { // recorded under another root already
		if loc == s.roots[i].path && strings.HasPrefix(v, "dir ") {
			s.roots[i].typ = typeDir
		} else if loc == s.roots[i].path && strings.HasPrefix(v, "sha256:") {
			s.roots[i].typ = typeReg
		}
		return
	}
	if len(s.entries) >= maxEntries {
		s.set(loc, i, Unchecked)
		return
	}
	fd, err := s.open(loc, unix.O_PATH)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR: // no such path (.git may be a worktree's file)
		s.set(loc, i, Absent)
		return
	case err != nil:
		s.set(loc, i, Unchecked)
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		s.set(loc, i, Unchecked)
		return
	}
	mode := fmt.Sprintf("mode:%04o", st.Mode&0o7777)
	r := s.roots[i]
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if path.IsAbs(loc) {
			// Outside the workspace, where the target may not read, only
			// what stat shows it anyway: no digest of contents.
			s.set(loc, i, fmt.Sprintf("file size:%d mtime:%d ctime:%d %s", st.Size, st.Mtim.Nano(), st.Ctim.Nano(), mode))
		} else {
			s.set(loc, i, s.hashFile(loc, st.Dev, st.Ino, st.Size, mode))
		}
		if loc == r.path {
			s.roots[i].typ = typeReg
		}
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			s.set(loc, i, Unchecked)
			return
		}
		sum := sha256.Sum256(buf[:n])
		s.set(loc, i, "symlink:"+hex.EncodeToString(sum[:]))
		if !r.shallow {
			s.follow(loc, r)
		}
	case unix.S_IFDIR:
		if path.IsAbs(loc) {
			// Outside, as for a file: what stat shows, never the names
			// inside, which the target may not list.
			s.set(loc, i, fmt.Sprintf("dir mtime:%d ctime:%d %s", st.Mtim.Nano(), st.Ctim.Nano(), mode))
		} else {
			s.set(loc, i, "dir "+mode)
		}
		if loc == r.path {
			s.roots[i].typ = typeDir
		}
		if !r.shallow && !path.IsAbs(loc) {
			s.dir(loc, i)
		}
	default:
		s.set(loc, i, fmt.Sprintf("type:%o %s", st.Mode&unix.S_IFMT, mode))
	}
}

// follow records where the symlink at loc resolves, and watches it: as
// a root of r's kind when it lies in the workspace, or outside it for a
// git or hooks root (git follows them; anything else outside is the
// target's to name and is not read).
func (s *Snapshot) follow(loc string, r root) {
	if s.follows++; s.follows > maxFollow {
		s.pseudo(loc+resolvesTo, Unchecked)
		return
	}
	to, _, err := s.resolve(path.Dir(loc), path.Base(loc))
	if err != nil {
		s.pseudo(loc+resolvesTo, Unchecked)
		return
	}
	s.pseudo(loc+resolvesTo, s.describe(to))
	if !path.IsAbs(to) || r.kind == kindGit || r.kind == kindHooks {
		s.add(root{path: to, kind: r.kind, linked: true})
	}
}

// hashFile digests the regular file (dev, ino) at loc, opened without
// following anything (openRegular). What it opens must be that very
// inode: one swapped in since the stat is left unchecked.
func (s *Snapshot) hashFile(loc string, dev, ino uint64, size int64, mode string) string {
	if size > maxFile || s.bytes+size > maxBytes {
		return Unchecked
	}
	f, st, err := s.openRegular(loc)
	if err != nil {
		return Unchecked
	}
	defer f.Close()
	if st.Dev != dev || st.Ino != ino {
		return Unchecked
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxFile+1))
	s.bytes += n
	if err != nil || n > maxFile {
		return Unchecked
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)) + " " + mode
}

// dir records the entries of the directory loc.
func (s *Snapshot) dir(loc string, i int) {
	names, err := s.readDir(loc)
	if err != nil {
		s.set(loc, i, Unchecked)
		return
	}
	for _, n := range names {
		s.entry(path.Join(loc, n), i)
	}
}

// readDir lists the directory loc, sorted, opened without following
// anything; more than maxEntries is an error.
func (s *Snapshot) readDir(loc string) ([]string, error) {
	fd, err := s.open(loc, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), loc)
	names, err := d.Readdirnames(maxEntries + 1)
	d.Close()
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(names) > maxEntries {
		return nil, unix.E2BIG
	}
	slices.Sort(names)
	return names, nil
}

// readFile reads the regular file loc in the workspace, following
// symlinks as git does (resolve), within max bytes; it also says whether
// a symlink was followed. What resolves outside the workspace is only
// stat'ed: its contents are the target's to choose and may be the
// broker's to read only (errOutside).
func (s *Snapshot) readFile(loc string, max int64) ([]byte, bool, error) {
	to, linked, err := s.resolve(path.Dir(loc), path.Base(loc))
	if err != nil {
		return nil, false, err
	}
	if path.IsAbs(to) {
		fd, err := s.open(to, unix.O_PATH)
		if err == nil {
			unix.Close(fd)
			err = errOutside
		}
		return nil, linked, err
	}
	f, _, err := s.openRegular(to)
	if err != nil {
		return nil, linked, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = unix.EFBIG
	}
	return b, linked, err
}

// errOutside: the contents of a file outside the workspace are not read.
var errOutside = errors.New("outside the workspace")

// openRegular opens loc to read only when it is a regular file: by path
// first (O_PATH, nothing followed), then, once fstat shows a regular
// file, that very inode again through /proc/self/fd, so that no FIFO or
// device is ever opened to read (a driver's open would run as the broker).
func (s *Snapshot) openRegular(loc string) (*os.File, *unix.Stat_t, error) {
	pfd, err := s.open(loc, unix.O_PATH)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil, unix.EINVAL
	}
	if onOpen != nil {
		onOpen(loc)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), loc), &st, nil
}
