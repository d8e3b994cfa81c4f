package broker

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
// and rmdir costs tens of microseconds on an ext4 disk, over a dozen of them
// per action, and far more on one without a journal, whose inode allocator
// skips every recently deleted inode. One spare set is made ahead, in the
// background, and renamed to the next handle; an ended action's set is
// renamed away (so its handle names nothing from then on) and removed in
// the background. Both background jobs start once the ended action is
// recorded (remove's caller), so that neither competes with an action's
// own path for the CPU. Nothing ever runs in a spare, and the entries a
// dead broker left, both kinds, are removed by the next one (Open). An
// unknown action's directories are never removed (removeActionDirs'
// callers).
type actionDirs struct {
	root  string
	logf  func(string, ...any)
	spare *ahead.One[string] // a spare set's path; also runs the removals
}

// openActionDirs removes what a previous broker left in root that is no
// action's, and makes the first spare.
func openActionDirs(root string, logf func(string, ...any)) *actionDirs {
	d := &actionDirs{root: root, logf: logf}
	d.spare = ahead.New(d.makeSpare, func(dir string) { os.RemoveAll(dir) })
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, sparePrefix) || strings.HasPrefix(n, trashPrefix) {
			d.removeInBackground(filepath.Join(root, n))
		}
	}
	d.spare.Refill()
	return d
}

// makeSpare makes a spare set under a new name.
func (d *actionDirs) makeSpare() (string, error) {
	dir := filepath.Join(d.root, journal.NewID(sparePrefix))
	if err := makeSet(dir); err != nil {
		os.RemoveAll(dir) // the next action makes its own
		return "", err
	}
	return dir, nil
}

// make gives handle its private directories: the spare, renamed, or a
// new set. The next spare is made when an action ends (remove).
func (d *actionDirs) make(handle string) (home, tmp string, err error) {
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

// remove takes handle's directories away at once; when they cannot be
// renamed, they are deleted here. It returns the call that starts the
// background work of an ended action, for the caller to make once the
// end is recorded: the deletion of what was renamed, and the next spare.
func (d *actionDirs) remove(handle string) (later func(), err error) {
	dir := filepath.Join(d.root, handle)
	trash := filepath.Join(d.root, journal.NewID(trashPrefix))
	switch err := os.Rename(dir, trash); {
	case err == nil:
		return func() { d.removeInBackground(trash); d.spare.Refill() }, nil
	case errors.Is(err, fs.ErrNotExist):
		return d.spare.Refill, nil
	}
	return d.spare.Refill, os.RemoveAll(dir) // os.RemoveAll follows no symlink a target planted
}

func (d *actionDirs) removeInBackground(path string) {
	d.spare.Go(func() {
		if err := os.RemoveAll(path); err != nil {
			d.logf("remove %s: %v", path, err)
		}
	})
}

// close waits for the background work and removes the spare.
func (d *actionDirs) close() { d.spare.Close() }
