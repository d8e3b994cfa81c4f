package actiondirs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"warrant/broker/internal/journal"
	"warrant/internal/ahead"
	"warrant/internal/rmtree"
)

// Prefixes of the entries of actions/ that are no action's: a spare set
// of private directories made ahead, an ended action's set on its way
// out, and the record of one of those that could not be removed (a file
// holding why, named after the entry: unremoved-trash-…). A handle never
// starts so.
const (
	sparePrefix     = "spare-"
	trashPrefix     = "trash-"
	unremovedPrefix = "unremoved-"
)

// Dirs are the actions' private directories beneath one actions/
// directory (the package doc).
type Dirs struct {
	root  string
	logf  func(string, ...any)
	spare *ahead.One[string] // a spare set's path; also runs the removals
}

// Open removes what a previous broker left in root that is no
// action's, and makes the first spare.
func Open(root string, logf func(string, ...any)) *Dirs {
	d := &Dirs{root: root, logf: logf}
	d.spare = ahead.New(d.makeSpare, func(dir string) { d.removeNow(filepath.Base(dir)) })
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		switch n := e.Name(); {
		case strings.HasPrefix(n, sparePrefix) || strings.HasPrefix(n, trashPrefix):
			d.removeInBackground(filepath.Join(root, n))
		case strings.HasPrefix(n, unremovedPrefix):
			if _, err := os.Lstat(filepath.Join(root, strings.TrimPrefix(n, unremovedPrefix))); errors.Is(err, fs.ErrNotExist) {
				os.Remove(filepath.Join(root, n)) // removed by hand since
			}
		}
	}
	d.spare.Refill()
	return d
}

// makeSpare makes a spare set under a new name.
func (d *Dirs) makeSpare() (string, error) {
	dir := filepath.Join(d.root, journal.NewID(sparePrefix))
	if err := makeSet(dir); err != nil {
		os.RemoveAll(dir) // the next action makes its own
		return "", err
	}
	return dir, nil
}

// Make gives handle its private directories: the spare, renamed, or a
// new set. The next spare is made when an action ends (Remove).
func (d *Dirs) Make(handle string) (home, tmp string, err error) {
	dir := filepath.Join(d.root, handle)
	home, tmp = filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	if spare, ok := d.spare.Take(); ok {
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

// goTelemetryMode is the go command's telemetry mode file beneath a HOME:
// os.UserConfigDir()/go/telemetry/mode, where the broker sets no
// XDG_CONFIG_HOME (one the operator declares moves it, and then the file
// here is not read).
var goTelemetryMode = filepath.Join(userConfigDir(), "go", "telemetry", "mode")

// userConfigDir is os.UserConfigDir beneath HOME, by the rule it follows
// on this system.
func userConfigDir() string {
	if runtime.GOOS == "darwin" {
		return filepath.Join("Library", "Application Support")
	}
	return ".config"
}

// makeSet makes dir and its home and tmp, 0700, and in home the go
// command's telemetry mode, off. Under its default mode (local) every go
// command starts a telemetry child with setsid. On Linux the launcher's
// seccomp filter denies that, and the go command printed "can't start
// telemetry child process: … operation not permitted" on the action's
// stderr; on macOS the child would leave the action's process group.
// Off, it starts none and writes no counters into a HOME removed at the
// end.
func makeSet(dir string) error {
	home := filepath.Join(dir, "home")
	for _, p := range []string{dir, home, filepath.Join(dir, "tmp")} {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
	}
	mode := filepath.Join(home, goTelemetryMode)
	if err := os.MkdirAll(filepath.Dir(mode), 0o700); err != nil {
		return err
	}
	return os.WriteFile(mode, []byte("off\n"), 0o600)
}

// Remove takes handle's directories away at once; when they cannot be
// renamed, they are deleted here. It returns the call that starts the
// background work of an ended action, for the caller to make once the
// end is recorded: the deletion of what was renamed, and the next spare.
func (d *Dirs) Remove(handle string) (later func(), err error) {
	dir := filepath.Join(d.root, handle)
	trash := filepath.Join(d.root, journal.NewID(trashPrefix))
	switch err := os.Rename(dir, trash); {
	case err == nil:
		return func() { d.removeInBackground(trash); d.spare.Refill() }, nil
	case errors.Is(err, fs.ErrNotExist):
		return d.spare.Refill, nil
	}
	return d.spare.Refill, rmtree.Beneath(d.root, handle)
}

// removeInBackground removes path, an entry of the actions directory, in
// the background (removeNow).
func (d *Dirs) removeInBackground(path string) {
	d.spare.Go(func() { d.removeNow(filepath.Base(path)) })
}

// removeNow removes name, an entry of the actions directory, and what is
// in it, following no symlink a target planted and whatever modes it left
// (internal/rmtree). A failure is logged and recorded beside it
// (unremoved-NAME, holding the error), for `broker status` and for the
// next start, which tries again; a success removes that record.
func (d *Dirs) removeNow(name string) {
	record := filepath.Join(d.root, unremovedPrefix+name)
	err := rmtree.Beneath(d.root, name)
	if err == nil {
		if err := os.Remove(record); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.logf("remove %s: %v", record, err)
		}
		return
	}
	d.logf("remove %s: %v", filepath.Join(d.root, name), err)
	if werr := os.WriteFile(record, []byte(err.Error()+"\n"), 0o600); werr != nil {
		d.logf("record that %s was not removed: %v", name, werr)
	}
}

// Unremoved is an entry of the actions directory that a broker could not
// remove (each start tries again), and the error that stopped it.
type Unremoved struct {
	Path  string
	Error string
}

// ReadUnremoved lists what the brokers of a state directory could not
// remove of their actions' directories, from the records they left in
// its actions directory dir (an empty list when there is none). A
// record whose entry is gone is left out; the next start removes it.
func ReadUnremoved(dir string) ([]Unremoved, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the actions directory: %w", err)
	}
	out := []Unremoved{}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), unremovedPrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		why, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			why = []byte(err.Error())
		}
		out = append(out, Unremoved{Path: path, Error: strings.TrimSpace(string(why))})
	}
	return out, nil
}

// Refill makes the next spare in the background, as Remove's call does:
// for an ended action whose directories are kept (unknown).
func (d *Dirs) Refill() { d.spare.Refill() }

// Close waits for the background work and removes the spare.
func (d *Dirs) Close() { d.spare.Close() }
