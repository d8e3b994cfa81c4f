package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"warrant/broker/client"
)

// Dirs is the state directory layout (docs/architecture.md §3.3).
type Dirs struct {
	Root     string
	Journal  string // journal.db
	Keys     string // keys/: the receipt signing and HMAC keys (keys.go)
	Run      string // run/: agent.sock and operator.sock
	Actions  string // actions/<handle>/{home,tmp} (broker/internal/actiondirs)
	Output   string // output/<handle>/{stdout,stderr}: live output's spills (broker/internal/follow)
	Caches   string // caches/<key>/{workspace,data/}: the per-workspace caches (broker/internal/caches)
	Env      string // env: the operator's declared environment, NAME=VALUE lines (broker/internal/admission)
	Bindings string // bindings: the executables that default to the sealed snapshot (broker/internal/admission)
	Egress   string // egress: the operator's named egress presets (broker/internal/egress.ReadPresets)
	LockFile string // lock: flock'd by the one broker using this directory
}

// Layout is the layout beneath root, which must be absolute.
func Layout(root string) Dirs {
	agentSock, _ := client.SocketPaths(root)
	return Dirs{
		Root:     root,
		Journal:  filepath.Join(root, "journal.db"),
		Keys:     filepath.Join(root, "keys"),
		Run:      filepath.Dir(agentSock),
		Actions:  filepath.Join(root, "actions"),
		Output:   filepath.Join(root, "output"),
		Caches:   filepath.Join(root, "caches"),
		Env:      filepath.Join(root, "env"),
		Bindings: filepath.Join(root, "bindings"),
		Egress:   filepath.Join(root, "egress"),
		LockFile: filepath.Join(root, "lock"),
	}
}

// Prepare creates the layout, every directory 0700 and owned by the
// broker's uid. An existing directory with another owner is refused;
// one with wider permissions is narrowed.
func Prepare(root string) (Dirs, error) {
	if root == "" {
		return Dirs{}, errors.New("prepare state directory: no directory given")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Dirs{}, fmt.Errorf("prepare state directory: %w", err)
	}
	d := Layout(abs)
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return d, fmt.Errorf("prepare state directory: %w", err)
	}
	for _, dir := range []string{d.Root, d.Keys, d.Run, d.Actions, d.Output, d.Caches} {
		if err := privateDir(dir); err != nil {
			return d, fmt.Errorf("prepare state directory: %w", err)
		}
	}
	return d, nil
}

// Lock is a broker's hold on its state directory: the directory
// prepared (Prepare) and its lock file flock'd. Whatever a broker shares
// with any other broker of the same directory — above all the runner's
// cgroup directories, named by the directory alone — may be made, and
// removed, only while this is held: a broker that loses the race must
// leave the winner's untouched (`broker serve` and the embedded broker
// of `broker run` take it before anything else, broker/cli).
type Lock struct {
	dirs Dirs
	f    *os.File
}

// Take prepares the state directory and takes its lock. A broker is
// already using it: an error saying "another broker is using DIR".
func Take(dir string) (*Lock, error) {
	dirs, err := Prepare(dir)
	if err != nil {
		return nil, err
	}
	f, err := Flock(dirs)
	if err != nil {
		return nil, err
	}
	return &Lock{dirs: dirs, f: f}, nil
}

// Dirs is the layout of the directory l holds.
func (l *Lock) Dirs() Dirs { return l.dirs }

// Release drops the lock. Whoever took it releases it, after everything
// made under it is gone.
func (l *Lock) Release() { l.f.Close() }

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
	if uid, ok := OwnerOf(fi); !ok || uid != uint32(os.Getuid()) {
		return fmt.Errorf("%s is not owned by uid %d", dir, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}
