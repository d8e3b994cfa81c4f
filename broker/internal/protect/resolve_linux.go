package protect

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// resolve is the location p names relative to the location base, every
// symlink followed as the kernel (and git's realpath) would, by lstat
// and readlink of one component at a time: relative and in plain form
// when it lies in the workspace, absolute when outside. A name that
// does not exist ends the walk; the rest is taken as written. linked
// says whether a symlink was followed.
func (s *Snapshot) resolve(base, p string) (loc string, linked bool, err error) {
	if s.wsPath == "" || p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", false, unix.EINVAL
	}
	if !path.IsAbs(p) {
		p = s.abs(base) + "/" + p
	}
	var done []string
	todo := strings.Split(p, "/")
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := "/" + path.Join(append(done, c)...)
		var st unix.Stat_t
		if err := unix.Lstat(cur, &st); err == unix.ENOENT || err == unix.ENOTDIR {
			return s.loc(path.Join(append([]string{cur}, todo...)...)), linked, nil
		} else if err != nil {
			return "", linked, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			done = append(done, c)
			continue
		}
		if hops++; hops > maxHops {
			return "", linked, unix.ELOOP
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlink(cur, buf)
		if err != nil || n == 0 {
			return "", linked, unix.EINVAL
		}
		linked = true
		target := string(buf[:n])
		if path.IsAbs(target) {
			done = nil
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return s.loc("/" + path.Join(done...)), linked, nil
}

// abs is loc as an absolute path.
func (s *Snapshot) abs(loc string) string {
	if path.IsAbs(loc) {
		return loc
	}
	return path.Join(s.wsPath, loc)
}

// loc is the clean absolute path abs as a location: relative when it
// lies in the workspace.
func (s *Snapshot) loc(abs string) string {
	abs = path.Clean(abs)
	if abs == s.wsPath {
		return "."
	}
	if s.wsPath == "/" {
		return abs[1:]
	}
	if rel, ok := strings.CutPrefix(abs, s.wsPath+"/"); ok {
		return rel
	}
	return abs
}

// describe is a location as a resolution entry's state: quoted, said to
// be outside when it is, and by digest when it would not fit.
func (s *Snapshot) describe(loc string) string {
	suffix := ""
	if path.IsAbs(loc) {
		suffix = outsideWS
	}
	q := strconv.QuoteToASCII(loc)
	if len(q) > 200 {
		sum := sha256.Sum256([]byte(loc))
		q = "sha256:" + hex.EncodeToString(sum[:])
	}
	return q + suffix
}
