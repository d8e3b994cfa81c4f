package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"warrant/broker/internal/journal"
)

// Prefixes of the entries of actions/ that are no action's: a spare set
// of private directories made ahead, and an ended action's set on its
// way out. A handle never starts so.
const (
	sparePrefix = "spare-"
	trashPrefix = "trash-"
)

// actionDirs makes and removes actions' private HOME and TMPDIR
// (actions/<handle>/{home,tmp}, 0700) off the actions' path: each mkdir
// and rmdir costs tens of microseconds on an ext4 disk, six of them per
// action. One spare set is made ahead, in the background, and renamed to
// the next handle; an ended action's set is renamed away (so its handle
// names nothing from then on) and removed in the background. Nothing
// ever runs in a spare, and the entries a dead broker left, both kinds,
// are removed by the next one (Open). An unknown action's directories are
// never removed (removeActionDirs' callers).
type actionDirs struct {
	root string
	logf func(string, ...any)

	mu     sync.Mutex
	spare  string // a ready spare set, or ""
	making bool
	closed bool
	bg     sync.WaitGroup // the refill and removals in flight
}

// openActionDirs removes what a previous broker left in root that is no
// action's, and makes the first spare.
func openActionDirs(root string, logf func(string, ...any)) *actionDirs {
	d := &actionDirs{root: root, logf: logf}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, sparePrefix) || strings.HasPrefix(n, trashPrefix) {
			d.removeInBackground(filepath.Join(root, n))
		}
	}
	d.refill()
	return d
}

// make gives handle its private directories: the spare, renamed, or a
// new set.
func (d *actionDirs) make(handle string) (home, tmp string, err error) {
	dir := filepath.Join(d.root, handle)
	home, tmp = filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	d.mu.Lock()
	spare := d.spare
	d.spare = ""
	d.mu.Unlock()
	defer d.refill()
	if spare != "" {
		if err := os.Rename(spare, dir); err == nil {
			return home, tmp, nil
		}
		d.removeInBackground(spare)
	}
	if err := makeSet(dir); err != nil {
		return "", "", fmt.Errorf("create action directory: %w", err)
	}
	return home, tmp, nil
}

// makeSet makes dir and its home and tmp, 0700.
func makeSet(dir string) error {
	for _, p := range []string{dir, filepath.Join(dir, "home"), filepath.Join(dir, "tmp")} {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// remove takes handle's directories away at once and deletes them in the
// background. When they cannot be renamed, they are deleted here.
func (d *actionDirs) remove(handle string) error {
	dir := filepath.Join(d.root, handle)
	trash := filepath.Join(d.root, journal.NewID(trashPrefix))
	switch err := os.Rename(dir, trash); {
	case err == nil:
		d.removeInBackground(trash)
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return os.RemoveAll(dir) // os.RemoveAll follows no symlink a target planted
}

func (d *actionDirs) removeInBackground(path string) {
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		if err := os.RemoveAll(path); err != nil {
			d.logf("remove %s: %v", path, err)
		}
	}()
}

// refill makes the next spare in the background, unless one is ready or
// being made, or close has begun.
func (d *actionDirs) refill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.spare != "" || d.making {
		return
	}
	d.making = true
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		dir := filepath.Join(d.root, journal.NewID(sparePrefix))
		err := makeSet(dir)
		d.mu.Lock()
		defer d.mu.Unlock()
		d.making = false
		switch {
		case err != nil:
			os.RemoveAll(dir) // the next action makes its own
		case d.closed:
			os.RemoveAll(dir)
		default:
			d.spare = dir
		}
	}()
}

// close waits for the background work and removes the spare.
func (d *actionDirs) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.bg.Wait()
	if d.spare != "" {
		os.RemoveAll(d.spare)
		d.spare = ""
	}
}
