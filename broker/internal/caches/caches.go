package caches

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"warrant/wire"
)

// Var is one variable a workspace's cache sets, and the subdirectory of
// data/ it names.
type Var struct{ Name, Sub string }

// Standard are the variables every action's cache sets. CARGO_HOME is
// where cargo keeps its registry, git checkouts and locks (never
// ~/.cargo, which holds credentials.toml); GRADLE_USER_HOME Gradle's
// caches and wrapper distributions; uv's cache is XDG_CACHE_HOME/uv.
var Standard = []Var{
	{"CARGO_HOME", "cargo-home"},
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"GRADLE_USER_HOME", "gradle"},
	{"PIP_CACHE_DIR", "pip"},
	{"XDG_CACHE_HOME", "xdg"},
	{"npm_config_cache", "npm"},
}

// Fixed are the variables every cache sets to a value: uv copies what
// it installs out of its cache (UV_LINK_MODE=copy) instead of hard
// linking it, so that no file of the workspace shares an inode with the
// cache, which outlives the workspace's files and is shared by its
// actions.
var Fixed = []wire.EnvVar{{Name: "UV_LINK_MODE", Value: "copy"}}

// CargoTarget is the variable set only when the operator asks for it: a
// shared target directory changes where cargo puts its build output.
var CargoTarget = Var{"CARGO_TARGET_DIR", "cargo-target"}

// Names are every variable a cache may set; the operator may declare none
// of them.
func Names() []string {
	var n []string
	for _, v := range append(Standard[:len(Standard):len(Standard)], CargoTarget) {
		n = append(n, v.Name)
	}
	for _, kv := range Fixed {
		n = append(n, kv.Name)
	}
	return n
}

// Store is the state directory's caches/.
type Store struct {
	root        string // canonical: every path handed out is a policy path
	cargoTarget bool
	now         func() time.Time

	mu      sync.Mutex
	written map[string]written // cache directory → this Store's last use record there
}

// written is when a use record was written, and the workspace path in it.
type written struct {
	at   time.Time
	path string
}

// recordEvery is how often a workspace's use record is rewritten while
// its path stays the same: the last use is kept to the minute, not
// rewritten (four system calls and a rename) at every action.
const recordEvery = time.Minute

// Open opens the caches directory root, which the broker has created
// (0700). cargoTarget adds CARGO_TARGET_DIR to every cache's variables.
func Open(root string, cargoTarget bool, now func() time.Time) (*Store, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("open the caches directory: %w", err)
	}
	return &Store{root: real, cargoTarget: cargoTarget, now: now, written: map[string]written{}}, nil
}

// Root is the canonical path of the caches directory.
func (s *Store) Root() string { return s.root }

// Cache is one workspace's cache.
type Cache struct {
	Dir string        // <root>/<key>/data, canonical: the action's read-write path
	Env []wire.EnvVar // the variables pointed into it, and Fixed
}

// record is the use record, <root>/<key>/workspace.
type record struct {
	Path      string `json:"path"` // as last seen
	Dev       uint64 `json:"dev"`
	Ino       uint64 `json:"ino"`
	BirthNs   int64  `json:"birth_ns"`
	LastUseNs int64  `json:"last_use_unix_ns"`
}

// Key is the cache key of a workspace identity.
func Key(ws wire.DirIdentity) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[0:], ws.Dev)
	binary.BigEndian.PutUint64(b[8:], ws.Ino)
	binary.BigEndian.PutUint64(b[16:], uint64(ws.BirthNs))
	sum := sha256.Sum256(b[:])
	return hex.EncodeToString(sum[:16])
}

// Dir is the read-write directory of the workspace ws's cache (For
// creates it).
func (s *Store) Dir(ws wire.DirIdentity) string { return filepath.Join(s.root, Key(ws), "data") }

// For returns the cache of the workspace ws, creating what is missing of
// it and recording this use.
func (s *Store) For(ws wire.DirIdentity) (*Cache, error) {
	data := s.Dir(ws)
	dir := filepath.Dir(data)
	now := s.now()
	s.mu.Lock()
	last := s.written[dir]
	s.mu.Unlock()
	fresh := last.path == ws.Path && now.Sub(last.at) < recordEvery
	// Within recordEvery of this Store's last record, dir and data are as
	// it left them: no target reaches them, and removal is the operator's
	// with no broker running.
	for _, d := range []string{dir, data} {
		if fresh {
			break
		}
		if err := private(d); err != nil {
			return nil, fmt.Errorf("create the workspace's cache: %w", err)
		}
	}
	vars := Standard
	if s.cargoTarget {
		vars = append(vars[:len(vars):len(vars)], CargoTarget)
	}
	c := &Cache{Dir: data, Env: slices.Clone(Fixed)}
	for _, v := range vars {
		p := filepath.Join(data, v.Sub)
		// A target may have replaced it with anything; Mkdir follows no
		// symlink, and what the target made of its own cache is its own.
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create the workspace's cache: %w", err)
		}
		c.Env = append(c.Env, wire.EnvVar{Name: v.Name, Value: p})
	}
	if fresh {
		return c, nil
	}
	rec := record{Path: ws.Path, Dev: ws.Dev, Ino: ws.Ino, BirthNs: ws.BirthNs, LastUseNs: now.UnixNano()}
	if err := writeRecord(dir, &rec); err != nil {
		return nil, fmt.Errorf("record the use of the workspace's cache: %w", err)
	}
	s.mu.Lock()
	s.written[dir] = written{at: now, path: ws.Path}
	s.mu.Unlock()
	return c, nil
}

// private makes d a directory of the broker's uid, 0700, unless it is
// one already; a symlink or anything else there is refused.
func private(d string) error {
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", d)
	}
	if uid, ok := owner(fi); !ok || uid != uint32(os.Getuid()) {
		return fmt.Errorf("%s is not owned by uid %d", d, os.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(d, 0o700)
	}
	return nil
}

// writeRecord replaces dir's use record in one rename.
func writeRecord(dir string, rec *record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".workspace-*")
	if err != nil {
		return err
	}
	if _, err = f.Write(append(b, '\n')); err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, "workspace"))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
