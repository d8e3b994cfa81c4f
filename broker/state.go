package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"warrant/broker/internal/actiondirs"
	"warrant/broker/internal/admission"
	"warrant/broker/internal/caches"
	"warrant/broker/internal/statedir"
)

// The state directory from outside a running broker: its lock, and what
// the CLI lists or prunes in it with no broker of its own (the receipt
// log's, capability's and witness's readers are receipts_read.go; where
// it is by default, client.DefaultStateDir). Each is its room's, given
// the layout.

// StateLock is a broker's hold on its state directory (statedir.Lock):
// whatever a broker shares with any other broker of the same directory —
// above all the runner's cgroup directories — may be made, and removed,
// only while it is held.
type StateLock = statedir.Lock

// LockState prepares the state directory and takes its lock. A broker is
// already using it: an error saying "another broker is using DIR".
func LockState(dir string) (*StateLock, error) { return statedir.Take(dir) }

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
	return caches.List(statedir.Layout(abs).Caches)
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
	d := statedir.Layout(abs)
	if _, err := os.Lstat(d.Caches); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	lock, err := statedir.Flock(d)
	if err != nil {
		return nil, fmt.Errorf("prune caches: %w (prune needs the state directory to itself: stop `broker serve` first)", err)
	}
	defer lock.Close()
	return caches.Prune(d.Caches, cutoff, all)
}

// Unremoved is an entry of the actions directory that a broker could not
// remove (each start tries again), and the error that stopped it.
type Unremoved = actiondirs.Unremoved

// ReadUnremoved lists what the brokers of the state directory root could
// not remove of their actions' directories, from the records they left
// (an empty list when there is none).
func ReadUnremoved(root string) ([]Unremoved, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("read the actions directory: %w", err)
	}
	return actiondirs.ReadUnremoved(statedir.Layout(abs).Actions)
}

// ToolchainInfo is what an action of one program gets of its toolchain
// (`broker toolchains`).
type ToolchainInfo = admission.ToolchainInfo

// Toolchains says, for each program, or when none for a program of each
// toolchain at the known places, which toolchain an action of it would
// get from a broker of stateDir (admission.Toolchains). It reads the
// state directory and writes nothing.
func Toolchains(stateDir string, programs []string) ([]ToolchainInfo, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("list toolchains: %w", err)
	}
	return admission.Toolchains(statedir.Layout(abs), programs)
}
