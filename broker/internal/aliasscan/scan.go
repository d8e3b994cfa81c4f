package aliasscan

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// The scan's bounds. Over any of them the scan fails with a *LimitError;
// it never answers for part of a tree.
const (
	// MaxEntries is the most names (of every kind) a scanned tree may
	// hold. A checkout of a large repository with its build output fits;
	// a home directory does not.
	MaxEntries = 250_000
	// MaxDepth is the most directory levels below the root; the walk
	// holds one descriptor per level.
	MaxDepth = 512
	// MaxDuration is the longest Check lets a scan run, on the monotonic
	// clock.
	MaxDuration = 5 * time.Second
)

// The bounds in force. Only this package's tests change them.
var (
	maxEntries  = MaxEntries
	maxDepth    = MaxDepth
	maxDuration = MaxDuration
)

// listBatch is how many names are read from a directory at a time, so
// that a huge directory meets the entry limit before it is read whole.
const listBatch = 1024

// Result is what a finished scan found.
type Result struct {
	Entries int // names listed, of every kind
	Dirs    int // directories listed, the root included
	Files   int // regular files checked
	// Aliased are the names inside the tree, relative to the root and
	// sorted, of every regular file that also has a name outside it.
	Aliased []string
}

// Limit names one of the scan's bounds.
type Limit uint8

// The bounds a *LimitError can name.
const (
	LimitEntries Limit = iota + 1
	LimitDepth
	LimitDuration
)

// LimitError is a scan stopped at one of its bounds.
type LimitError struct {
	Limit Limit
	max   string
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitEntries:
		return "the tree holds more than " + e.max + " entries (the alias scan's limit)"
	case LimitDepth:
		return "the tree is more than " + e.max + " directories deep (the alias scan's limit)"
	case LimitDuration:
		return "the scan did not finish within " + e.max + " (the alias scan's limit)"
	}
	panic("aliasscan: internal error: unknown limit")
}

// ErrChanged is a directory that was not what it was a moment before: a
// name stat'ed as a directory that opened as something else or as
// another directory. The tree is being changed under the scan.
var ErrChanged = errors.New("the tree changed while it was scanned")

type fileID struct{ dev, ino uint64 }

type facts struct {
	id    fileID
	mode  uint32
	nlink uint64
}

// linked is a regular file with several names: the most names any stat
// of it reported, and the names found inside the tree.
type linked struct {
	nlink uint64
	names []string
}

type walker struct {
	deadline time.Time
	res      Result
	walked   map[fileID]bool // directories, by (dev, ino)
	linked   map[fileID]*linked
}

// Scan walks the directory tree at root by descriptor, without following
// any symlink, and reports the regular files inside it that have a name
// outside it. root is an open directory (O_PATH is enough on Linux); it
// is reopened for reading and not moved. A scan still running at
// deadline fails with a *LimitError, as does one over MaxEntries or
// MaxDepth; any other failure to list, stat or open the tree fails it
// too. On error there is no Result.
func Scan(root *os.File, deadline time.Time) (*Result, error) {
	w := &walker{deadline: deadline, walked: map[fileID]bool{}, linked: map[fileID]*linked{}}
	rootFd := int(root.Fd())
	want, err := statFd(rootFd)
	if err != nil {
		return nil, fmt.Errorf("stat the root: %w", err)
	}
	if want.mode&typeMask != typeDir {
		return nil, fmt.Errorf("stat the root: %w", errNotDir)
	}
	if err := w.dir(rootFd, ".", "", want.id, 0); err != nil {
		return nil, err
	}
	for _, l := range w.linked {
		if uint64(len(l.names)) < l.nlink {
			w.res.Aliased = append(w.res.Aliased, l.names...)
		}
	}
	slices.Sort(w.res.Aliased)
	return &w.res, nil
}

// dir walks the directory name beneath parent, found at rel (relative
// to the root, "" for the root itself) and stat'ed as want.
func (w *walker) dir(parent int, name, rel string, want fileID, depth int) error {
	f, err := openDirAt(parent, name)
	switch {
	case err == nil:
	case depth > 0 && errors.Is(err, errNotExist):
		return nil // removed since it was listed: no longer a name in the tree
	case depth > 0 && (errors.Is(err, errLoop) || errors.Is(err, errNotDir)):
		return fmt.Errorf("open %s: %w", show(rel), ErrChanged)
	default:
		return fmt.Errorf("open %s: %w", show(rel), err)
	}
	defer f.Close()
	fd := int(f.Fd())
	got, err := statFd(fd)
	if err != nil {
		return fmt.Errorf("stat %s: %w", show(rel), err)
	}
	if got.id != want {
		return fmt.Errorf("open %s: %w", show(rel), ErrChanged)
	}
	if w.walked[got.id] {
		return nil // the same directory again, through another mount
	}
	w.walked[got.id] = true
	w.res.Dirs++
	names, err := w.list(f, rel)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := w.inTime(); err != nil {
			return err
		}
		st, err := statAt(fd, n)
		if errors.Is(err, errNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return fmt.Errorf("stat %s: %w", show(join(rel, n)), err)
		}
		switch st.mode & typeMask {
		case typeDir:
			if depth >= maxDepth {
				return &LimitError{Limit: LimitDepth, max: grouped(maxDepth)}
			}
			if err := w.dir(fd, n, join(rel, n), st.id, depth+1); err != nil {
				return err
			}
		case typeReg:
			w.res.Files++
			if st.nlink > 1 {
				w.link(st, join(rel, n))
			}
		}
	}
	return nil
}

// list reads every name in f, counting them against the entry limit as
// they come.
func (w *walker) list(f *os.File, rel string) ([]string, error) {
	var names []string
	for {
		batch, err := f.Readdirnames(listBatch)
		w.res.Entries += len(batch)
		if w.res.Entries > maxEntries {
			return nil, &LimitError{Limit: LimitEntries, max: grouped(maxEntries)}
		}
		names = append(names, batch...)
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", show(rel), err)
		}
		if err := w.inTime(); err != nil {
			return nil, err
		}
	}
}

// link records one name of a file with several.
func (w *walker) link(st facts, name string) {
	l := w.linked[st.id]
	if l == nil {
		l = &linked{}
		w.linked[st.id] = l
	}
	l.nlink = max(l.nlink, st.nlink) // a link added during the scan only makes it stricter
	l.names = append(l.names, name)
}

// inTime fails once the deadline has passed (monotonic: deadline comes
// from time.Now().Add).
func (w *walker) inTime() error {
	if time.Now().After(w.deadline) {
		return &LimitError{Limit: LimitDuration, max: "its deadline"} // Check names its budget
	}
	return nil
}

func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}
