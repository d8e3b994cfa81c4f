package caches

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"warrant/internal/rmtree"
)

// Info describes one cache for `broker caches list`.
type Info struct {
	Key       string    `json:"key"`
	Dir       string    `json:"dir"`                 // its data/ directory
	Workspace string    `json:"workspace,omitempty"` // the workspace's path as last seen; empty if unknown
	Dev       uint64    `json:"dev,omitempty"`
	Ino       uint64    `json:"ino,omitempty"`
	LastUse   time.Time `json:"last_use"` // the last submit from that workspace; the directory's mtime if unrecorded
	Bytes     int64     `json:"bytes"`    // the apparent size of its regular files
	Files     int64     `json:"files"`
	Problem   string    `json:"problem,omitempty"` // what could not be read
}

// List describes every cache under root, oldest use first. A root that
// does not exist holds none. It takes no lock: what it reads, a running
// broker only replaces whole (the use record) or its targets write.
func List(root string) ([]Info, error) {
	names, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the caches: %w", err)
	}
	var out []Info
	for _, n := range names {
		if !validKey(n.Name()) || !n.IsDir() {
			continue
		}
		out = append(out, describe(root, n.Name()))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastUse.Before(out[j].LastUse) })
	return out, nil
}

func validKey(k string) bool {
	b, err := hex.DecodeString(k)
	return err == nil && len(b) == 16 && hex.EncodeToString(b) == k
}

func describe(root, key string) Info {
	dir := filepath.Join(root, key)
	in := Info{Key: key, Dir: filepath.Join(dir, "data")}
	if fi, err := os.Lstat(dir); err == nil {
		in.LastUse = fi.ModTime()
	}
	if b, err := os.ReadFile(filepath.Join(dir, "workspace")); err != nil {
		in.Problem = "no use record: " + err.Error()
	} else {
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			in.Problem = "unreadable use record: " + err.Error()
		} else {
			in.Workspace, in.Dev, in.Ino, in.LastUse = rec.Path, rec.Dev, rec.Ino, time.Unix(0, rec.LastUseNs)
		}
	}
	// WalkDir uses Lstat: symlinks are counted as entries, never followed,
	// and nothing but directories is opened.
	var incomplete error
	err := filepath.WalkDir(in.Dir, func(_ string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && d == nil:
			return err
		case err != nil: // a directory it cannot list: count the rest
			incomplete = cmp.Or(incomplete, err)
			return fs.SkipDir
		case d.Type().IsRegular():
			if fi, err := d.Info(); err == nil {
				in.Bytes += fi.Size()
				in.Files++
			}
		}
		return nil
	})
	if err = cmp.Or(err, incomplete); err != nil && in.Problem == "" {
		in.Problem = "size incomplete: " + err.Error()
	}
	return in
}

// Remove removes the cache key under root, by descriptor (internal/rmtree).
// The caller holds the state lock: no broker, and so no action, uses it.
func Remove(root, key string) error {
	if !validKey(key) {
		return fmt.Errorf("remove cache %q: not a cache key", key)
	}
	if err := rmtree.Beneath(root, key); err != nil {
		return fmt.Errorf("remove cache %s: %w", key, err)
	}
	return nil
}

// Prune removes the caches under root last used before cutoff, or every
// one when all, and returns those it removed; a cache that cannot be
// removed stops it, with the ones removed so far returned. The caller
// holds the state lock (Remove).
func Prune(root string, cutoff time.Time, all bool) ([]Info, error) {
	list, err := List(root)
	if err != nil {
		return nil, err
	}
	var removed []Info
	for _, c := range list {
		if !all && !c.LastUse.Before(cutoff) {
			continue
		}
		if err := Remove(root, c.Key); err != nil {
			return removed, fmt.Errorf("prune caches: %w", err)
		}
		removed = append(removed, c)
	}
	return removed, nil
}
