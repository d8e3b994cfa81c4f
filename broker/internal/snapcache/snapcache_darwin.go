package broker

import (
	"os"

	"warrant/wire"
)

// SnapCache is empty on macOS: there is no fexecve, so nothing can be
// executed from a snapshot and receipts say the binding is unbound
// (ARCHITECTURE §2.4).
type SnapCache struct{}

// NewSnapCache returns the empty cache.
func NewSnapCache(int, int64) *SnapCache { return &SnapCache{} }

// Get returns no snapshot: the executable stays unbound on macOS.
func (*SnapCache) Get(*os.File, wire.FileIdentity) (*os.File, error) { return nil, nil }

// Close does nothing.
func (*SnapCache) Close() {}
