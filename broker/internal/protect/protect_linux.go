package protect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Take records the protected entries beneath the workspace open as ws,
// by descriptor: nothing is followed (a symlink is recorded as a symlink,
// a symlink on the way makes the path unchecked), no FIFO or device is
// opened, and the linked worktree's gitdir is protected when .git is a
// "gitdir:" file naming a directory beneath the workspace.
func Take(ws *os.File) *Snapshot {
	fd, err := unix.FcntlInt(ws.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return &Snapshot{entries: map[string]string{".": Unchecked}}
	}
	return take(os.NewFile(uintptr(fd), ws.Name()), nil)
}

// take records Paths, the linked worktree's gitdir, every submodule
// gitdir found and also (for Again) the roots an earlier snapshot
// recorded, so that an entry is never reported deleted only because what
// made it a root went away.
func take(ws *os.File, also []string) *Snapshot {
	fd := int(ws.Fd())
	s := &Snapshot{ws: ws, entries: map[string]string{}}
	roots := slices.Clone(Paths)
	if gd := linkedGitdir(fd); gd != "" {
		roots = append(roots, gd+"/hooks/", gd+"/config")
	}
	n := 0
	if !submodules(fd, Submodules, 0, &n, func(gd string) { roots = append(roots, gd+"/hooks/", gd+"/config") }) {
		s.entries[Submodules] = Unchecked // past the bounds: not claimed unchanged
	}
	for _, r := range append(roots, also...) {
		if !slices.Contains(s.roots, r) {
			s.roots = append(s.roots, r)
			s.entry(fd, strings.TrimSuffix(r, "/"))
		}
	}
	return s
}

// submodules calls found with every submodule gitdir beneath dir (a
// directory holding a HEAD file; its own modules/ searched in turn; any
// other directory is part of a name with a slash). It reports false
// when the search went past maxGitdirs or maxDepth or a directory could
// not be read, true when dir is absent.
func submodules(ws int, dir string, depth int, n *int, found func(string)) bool {
	names, err := readDir(ws, dir)
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return true
	}
	if err != nil || depth >= maxDepth {
		return false
	}
	ok := true
	for _, name := range names {
		sub := path.Join(dir, name)
		if !isDir(ws, sub) {
			continue
		}
		if isFile(ws, sub+"/HEAD") {
			if *n++; *n > maxGitdirs {
				return false
			}
			found(sub)
			ok = submodules(ws, sub+"/modules", depth+1, n, found) && ok
		} else {
			ok = submodules(ws, sub, depth+1, n, found) && ok
		}
	}
	return ok
}

// isDir and isFile stat rel beneath the workspace without following
// anything.
func isDir(ws int, rel string) bool  { return statType(ws, rel) == unix.S_IFDIR }
func isFile(ws int, rel string) bool { return statType(ws, rel) == unix.S_IFREG }

func statType(ws int, rel string) uint32 {
	fd, err := unix.Openat2(ws, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
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

// Again records the same workspace's protected entries anew, for Diff,
// and releases s.
func (s *Snapshot) Again() *Snapshot {
	ws := s.ws
	if ws == nil {
		return &Snapshot{entries: map[string]string{".": Unchecked}}
	}
	s.ws = nil
	after := take(ws, s.roots)
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

// entry records rel and, for a directory, everything beneath it.
func (s *Snapshot) entry(ws int, rel string) {
	if len(s.entries) >= maxEntries {
		s.entries[rel] = Unchecked
		return
	}
	fd, err := unix.Openat2(ws, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR: // no such path (.git may be a worktree's file)
		s.entries[rel] = Absent
		return
	case err != nil:
		s.entries[rel] = Unchecked
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		s.entries[rel] = Unchecked
		return
	}
	mode := fmt.Sprintf("mode:%04o", st.Mode&0o7777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		s.entries[rel] = s.hashFile(ws, rel, st.Dev, st.Ino, st.Size, mode)
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			s.entries[rel] = Unchecked
			return
		}
		sum := sha256.Sum256(buf[:n])
		s.entries[rel] = "symlink:" + hex.EncodeToString(sum[:])
	case unix.S_IFDIR:
		s.entries[rel] = "dir " + mode
		s.dir(ws, rel)
	default:
		s.entries[rel] = fmt.Sprintf("type:%o %s", st.Mode&unix.S_IFMT, mode)
	}
}

// hashFile digests the regular file (dev, ino) at rel, opened beneath the
// workspace without following anything and without blocking. What it
// opens must be that very inode, still a regular file: one swapped in
// since the stat (a FIFO whose writer never writes would block the read
// for ever) is left unchecked.
func (s *Snapshot) hashFile(ws int, rel string, dev, ino uint64, size int64, mode string) string {
	if size > maxFile || s.bytes+size > maxBytes {
		return Unchecked
	}
	fd, err := unix.Openat2(ws, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return Unchecked
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != dev || st.Ino != ino {
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

// dir records the entries of the directory rel.
func (s *Snapshot) dir(ws int, rel string) {
	names, err := readDir(ws, rel)
	if err != nil {
		s.entries[rel] = Unchecked
		return
	}
	for _, n := range names {
		s.entry(ws, path.Join(rel, n))
	}
}

// readDir lists the directory rel beneath the workspace, sorted, opened
// without following anything; more than maxEntries is an error.
func readDir(ws int, rel string) ([]string, error) {
	fd, err := unix.Openat2(ws, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(fd), rel)
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

// linkedGitdir returns the gitdir a linked worktree's .git file names,
// relative to the workspace, when it lies beneath it; else "".
func linkedGitdir(ws int) string {
	fd, err := unix.Openat2(ws, ".git", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return ""
	}
	f := os.NewFile(uintptr(fd), ".git")
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return ""
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return ""
	}
	wsPath, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", ws))
	if err != nil {
		return ""
	}
	if !path.IsAbs(gd) {
		gd = path.Join(wsPath, gd)
	}
	rel, ok := strings.CutPrefix(path.Clean(gd), wsPath+"/")
	if !ok || rel == "" || strings.HasPrefix(rel, "..") {
		return ""
	}
	return rel
}
