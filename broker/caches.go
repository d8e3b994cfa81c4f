package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"warrant/broker/internal/caches"
)

// CacheInfo describes one workspace cache (`broker caches list`).
type CacheInfo = caches.Info

// ListCaches describes the workspace caches of the state directory,
// oldest use first. Like ReadReceiptLog it takes no lock, so it works
// beside a running broker.
func ListCaches(stateDir string) ([]CacheInfo, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("list caches: %w", err)
	}
	return caches.List(layout(abs).caches)
}

// PruneCaches removes the workspace caches last used before cutoff, or
// every one when all, and returns those it removed. It holds the state
// lock while it does, so it refuses while a broker (a daemon or the
// embedded broker of `broker run`) uses the directory: no action may be
// using a cache that goes. A cache that cannot be removed stops it, with
// the ones removed so far returned.
func PruneCaches(stateDir string, cutoff time.Time, all bool) ([]CacheInfo, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("prune caches: %w", err)
	}
	d := layout(abs)
	if _, err := os.Lstat(d.caches); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	lock, err := lockStateDir(d)
	if err != nil {
		return nil, fmt.Errorf("prune caches: %w (prune needs the state directory to itself: stop `broker serve` first)", err)
	}
	defer lock.Close()
	list, err := caches.List(d.caches)
	if err != nil {
		return nil, err
	}
	var removed []CacheInfo
	for _, c := range list {
		if !all && !c.LastUse.Before(cutoff) {
			continue
		}
		if err := caches.Remove(d.caches, c.Key); err != nil {
			return removed, fmt.Errorf("prune caches: %w", err)
		}
		removed = append(removed, c)
	}
	return removed, nil
}
