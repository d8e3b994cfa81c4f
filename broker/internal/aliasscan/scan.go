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
	Entries int // names listed in the tree, of every kind
	Dirs    int // directories of the tree listed, the root included
	Files   int // regular files checked
	// Aliased are the names inside the tree, relative to the root and
	// sorted, of every file (of any kind but a directory) that also has
	// a name outside the scope.
	Aliased []string
	kinds   map[string]uint32 // the type of each aliased name that is not a regular file
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

// MountError is a mount point inside a scanned tree: a name whose mount
// is not its root's.
type MountError struct {
	Name string // relative to the root
}

func (e *MountError) Error() string { return show(e.Name) + " is a mount point" }

// ScopeError is a failure met in one of the scope's other directories,
// not in the tree itself.
type ScopeError struct{ Err error }

func (e *ScopeError) Error() string { return e.Err.Error() }
func (e *ScopeError) Unwrap() error { return e.Err }

// errOverlap is a scope directory that holds the tree or lies in it.
var errOverlap = errors.New("it holds the workspace or lies in it")

// errAccounted stops a scope directory's walk once every name sought is
// found.
var errAccounted = errors.New("aliasscan: every name accounted for")

type fileID struct{ dev, ino uint64 }

type facts struct {
	id    fileID
	mode  uint32
	nlink uint64
	mnt   uint64 // the mount (Linux: statx's mount id; macOS: the device)
}

// linked is a file with several names: the most names any stat of it
// reported, the names found inside the tree, and the count of those
// found in the scope's other directories.
type linked struct {
	nlink  uint64
	mode   uint32
	names  []string
	others uint64
}

// accounted reports whether every name of l has been found in the scope.
func (l *linked) accounted() bool { return uint64(len(l.names))+l.others >= l.nlink }

type walker struct {
	deadline time.Time
	res      Result
	mnt      uint64          // the root's mount: every name must be on it
	walked   map[fileID]bool // directories, by (dev, ino)
	linked   map[fileID]*linked
	sought   map[fileID]*linked // a scope directory's walk: the tree's files not yet accounted for
	inTree   map[fileID]bool    // a scope directory's walk: the tree's directories
}

// Scan walks the directory tree at root by descriptor, without following
// any symlink, and reports the files inside it (of every kind but
// directories) that have a name outside the writable scope: root and the
// directories scope. root and each of scope are open directories (O_PATH
// is enough on Linux); they are reopened for reading and not moved. The
// scope's directories are walked the same way, only when the tree holds
// a file with more links than names in it, and only until every such
// file's names are found. A mount point in any of them (a name on another
// mount than its root) fails the scan with a *MountError. A scan still
// running at deadline fails with a *LimitError, as does a tree over
// MaxEntries or MaxDepth; any other failure to list, stat or open fails
// it too. A failure in a scope directory is a *ScopeError wrapping it. On
// error there is no Result.
func Scan(root *os.File, deadline time.Time, scope ...*os.File) (*Result, error) {
	w := &walker{deadline: deadline, walked: map[fileID]bool{}, linked: map[fileID]*linked{}}
	if err := w.tree(root); err != nil {
		return nil, err
	}
	sought := map[fileID]*linked{}
	for id, l := range w.linked {
		if !l.accounted() {
			sought[id] = l
		}
	}
	scopeWalked := map[fileID]bool{} // shared: a directory in two of them is walked once
	for _, dir := range scope {
		if len(sought) == 0 {
			break
		}
		sw := &walker{deadline: deadline, walked: scopeWalked, sought: sought, inTree: w.walked}
		if err := sw.tree(dir); err != nil && !errors.Is(err, errAccounted) {
			return nil, &ScopeError{Err: err}
		}
	}
	for _, l := range w.linked {
		if l.accounted() {
			continue
		}
		w.res.Aliased = append(w.res.Aliased, l.names...)
		if l.mode&typeMask != typeReg {
			if w.res.kinds == nil {
				w.res.kinds = map[string]uint32{}
			}
			for _, n := range l.names {
				w.res.kinds[n] = l.mode & typeMask
			}
		}
	}
	slices.Sort(w.res.Aliased)
	return &w.res, nil
}

// tree walks the tree at root.
func (w *walker) tree(root *os.File) error {
	rootFd := int(root.Fd())
	want, err := statFd(rootFd)
	if err != nil {
		return fmt.Errorf("stat the root: %w", err)
	}
	if want.mode&typeMask != typeDir {
		return fmt.Errorf("stat the root: %w", errNotDir)
	}
	w.mnt = want.mnt
	return w.dir(rootFd, ".", "", want.id, 0)
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
	if got.mnt != w.mnt {
		return &MountError{Name: rel} // mounted over since it was stat'ed
	}
	if w.inTree[got.id] {
		return errOverlap // its names would be counted twice
	}
	if w.walked[got.id] {
		return nil // the same directory again: scope directories that nest
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
		if st.mnt != w.mnt {
			return &MountError{Name: join(rel, n)}
		}
		switch st.mode & typeMask {
		case typeDir:
			if depth >= maxDepth {
				return &LimitError{Limit: LimitDepth, max: grouped(maxDepth)}
			}
			if err := w.dir(fd, n, join(rel, n), st.id, depth+1); err != nil {
				return err
			}
			continue
		case typeReg:
			w.res.Files++
		}
		if st.nlink > 1 {
			if err := w.link(st, join(rel, n)); err != nil {
				return err
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

// link records one name of a file with several: in the tree, as a name;
// in a scope directory, as one more found of a file sought, answering
// errAccounted once none is sought any more.
func (w *walker) link(st facts, name string) error {
	if w.sought != nil {
		l := w.sought[st.id]
		if l == nil {
			return nil
		}
		l.nlink = max(l.nlink, st.nlink)
		l.others++
		if l.accounted() {
			delete(w.sought, st.id)
			if len(w.sought) == 0 {
				return errAccounted
			}
		}
		return nil
	}
	l := w.linked[st.id]
	if l == nil {
		l = &linked{mode: st.mode}
		w.linked[st.id] = l
	}
	l.nlink = max(l.nlink, st.nlink) // a link added during the scan only makes it stricter
	l.names = append(l.names, name)
	return nil
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
