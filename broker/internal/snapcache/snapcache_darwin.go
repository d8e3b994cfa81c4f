package snapcache

import (
	"os"

	"warrant/wire"
)

// Cache is empty on macOS: there is no fexecve, so nothing can be
// executed from a snapshot and receipts say the binding is unbound
// (docs/architecture.md §2.4).
type Cache struct{}

// New returns the empty cache.
func New(int, int64) *Cache { return &Cache{} }

// Get returns no snapshot: the executable stays unbound on macOS.
func (*Cache) Get(*os.File, wire.FileIdentity) (*os.File, error) { return nil, nil }

// Close does nothing.
func (*Cache) Close() {}
