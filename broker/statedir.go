package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"warrant/broker/client"
)

// stateDirs is the state directory layout (docs/architecture.md §3.3).
type stateDirs struct {
	root     string
	journal  string // journal.db
	keys     string // keys/: the receipt signing and HMAC keys (owned by receipts)
	run      string // run/: agent.sock and operator.sock
	actions  string // actions/<handle>/{home,tmp}
	output   string // output/<handle>/{stdout,stderr}: live output's spills (broker/internal/follow)
	caches   string // caches/<key>/{workspace,data/}: the per-workspace caches (broker/internal/caches)
	env      string // env: the operator's declared environment, NAME=VALUE lines (declared.go)
	bindings string // bindings: the executables that default to the sealed snapshot (bindings.go)
	lock     string // lock: flock'd by the one broker using this directory
}

// DefaultStateDir is $WARRANT_STATE, else $XDG_STATE_HOME/warrant, else
// ~/.local/state/warrant.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("WARRANT_STATE"); d != "" {
		return d, nil
	}
	if d := client.XDGStateDir(); d != "" {
		return d, nil
	}
	return "", errors.New("find state directory: neither $WARRANT_STATE, $XDG_STATE_HOME nor a home directory is set")
}

func layout(root string) stateDirs {
	agentSock, _ := client.SocketPaths(root)
	return stateDirs{
		root:     root,
		journal:  filepath.Join(root, "journal.db"),
		keys:     filepath.Join(root, "keys"),
		run:      filepath.Dir(agentSock),
		actions:  filepath.Join(root, "actions"),
		output:   filepath.Join(root, "output"),
		caches:   filepath.Join(root, "caches"),
		env:      filepath.Join(root, "env"),
		bindings: filepath.Join(root, "bindings"),
		lock:     filepath.Join(root, "lock"),
	}
}

// prepareStateDir creates the layout, every directory 0700 and owned by
// the broker's uid. An existing directory with another owner is refused;
// one with wider permissions is narrowed.
func prepareStateDir(root string) (stateDirs, error) {
	if root == "" {
		return stateDirs{}, errors.New("prepare state directory: no directory given")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return stateDirs{}, fmt.Errorf("prepare state directory: %w", err)
	}
	d := layout(abs)
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return d, fmt.Errorf("prepare state directory: %w", err)
	}
	for _, dir := range []string{d.root, d.keys, d.run, d.actions, d.output, d.caches} {
		if err := privateDir(dir); err != nil {
			return d, fmt.Errorf("prepare state directory: %w", err)
		}
	}
	return d, nil
}

// StateLock is a broker's hold on its state directory: the directory
// prepared (prepareStateDir) and its lock file flock'd. Whatever a broker
// shares with any other broker of the same directory — above all the
// runner's cgroup directories, named by the directory alone — may be
// made, and removed, only while this is held: a broker that loses the
// race must leave the winner's untouched (`broker serve` and the embedded
// broker of `broker run` take it before anything else, broker/cli).
type StateLock struct {
	dirs stateDirs
	f    *os.File
}

// LockState prepares the state directory and takes its lock. A broker is
// already using it: an error saying "another broker is using DIR".
func LockState(dir string) (*StateLock, error) {
	dirs, err := prepareStateDir(dir)
	if err != nil {
		return nil, err
	}
	f, err := lockStateDir(dirs)
	if err != nil {
		return nil, err
	}
	return &StateLock{dirs: dirs, f: f}, nil
}

// Release drops the lock. Whoever took it releases it, after everything
// made under it is gone.
func (l *StateLock) Release() { l.f.Close() }

func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if uid, ok := ownerOf(fi); !ok || uid != uint32(os.Getuid()) {
		return fmt.Errorf("%s is not owned by uid %d", dir, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}
