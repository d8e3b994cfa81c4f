package protect

import (
	"io"
	"os"
	"path"
	"slices"

	"golang.org/x/sys/unix"
)

// discover walks the workspace for repositories, by descriptor and
// without following symlinks: the directories holding a .git entry (of
// any type; a .git directory is not entered) and the bare gitdirs (HEAD,
// objects/ and refs/; not entered). It reports false when it stopped at
// maxScanNames names, maxScanDepth levels or maxGitdirs repositories, or
// could not open a directory.
func (s *Snapshot) discover() (tops, bare []string, ok bool) {
	fd, err := unix.Openat(s.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, false
	}
	names, ok := 0, true
	var walk func(fd int, rel string, depth int)
	walk = func(fd int, rel string, depth int) {
		d := os.NewFile(uintptr(fd), rel)
		defer d.Close()
		var dirs []string
		has := map[string]os.FileMode{}
		for names <= maxScanNames {
			batch, err := d.ReadDir(1024)
			names += len(batch)
			for _, e := range batch {
				switch e.Name() {
				case ".git", "HEAD", "objects", "refs":
					has[e.Name()] = e.Type()
				}
				if e.IsDir() && e.Name() != ".git" {
					dirs = append(dirs, e.Name())
				}
			}
			if err != nil && err != io.EOF {
				ok = false // not searched whole
			}
			if err != nil || len(batch) == 0 {
				break
			}
		}
		if names > maxScanNames {
			ok = false
			return
		}
		if len(tops)+len(bare) >= maxGitdirs {
			ok = false
			return
		}
		if _, dotgit := has[".git"]; dotgit {
			tops = append(tops, rel)
		}
		if head, isRepo := has["HEAD"]; isRepo && head.IsRegular() && has["objects"].IsDir() && has["refs"].IsDir() {
			bare = append(bare, rel)
			return
		}
		slices.Sort(dirs)
		for _, name := range dirs {
			if depth >= maxScanDepth || names > maxScanNames {
				ok = false
				return
			}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				ok = false // unreadable: not searched, and said so
				continue
			}
			walk(cfd, path.Join(rel, name), depth+1)
		}
	}
	walk(fd, ".", 0)
	return tops, bare, ok
}
