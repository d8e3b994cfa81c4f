package snapcache

import (
	"container/list"
	"fmt"
	"os"
	"path"
	"sync"

	"golang.org/x/sys/unix"

	"warrant/internal/snapshot"
	"warrant/wire"
)

// Cache keeps sealed memfd snapshots of executables (docs/architecture.md
// §2.4), keyed by the source file's full fstat identity and its SHA-256,
// so that a file which changed in any way — content, inode, mode, owner,
// times — never hits an old snapshot. It is bounded by entry count and by
// total bytes, evicting the least recently used. Callers get their own
// duplicate descriptor, so eviction never closes a snapshot in use; the
// duplicates share the snapshot's inode, so a hit first re-checks the
// mode and seals it was made with, and a snapshot that changed (a
// target's fchmod of its own executable) is dropped and made anew.
type Cache struct {
	mu       sync.Mutex
	maxN     int
	maxBytes int64
	bytes    int64
	lru      *list.List // of *snapEntry, most recent first
	byKey    map[snapKey]*list.Element
}

type snapKey struct {
	dev, ino, size   uint64
	mode, uid        uint32
	mtimeNs, ctimeNs int64
	sum              [32]byte
}

type snapEntry struct {
	key   snapKey
	f     *os.File
	mode  uint32 // the snapshot's mode and seals when it was made
	seals int
}

// intact reports whether the snapshot still has the mode and seals it was
// made with.
func (se *snapEntry) intact() bool {
	var st unix.Stat_t
	if unix.Fstat(int(se.f.Fd()), &st) != nil || st.Mode != se.mode {
		return false
	}
	seals, err := unix.FcntlInt(se.f.Fd(), unix.F_GET_SEALS, 0)
	return err == nil && seals == se.seals
}

// New returns a cache holding at most maxN snapshots and maxBytes
// bytes of them.
func New(maxN int, maxBytes int64) *Cache {
	return &Cache{maxN: maxN, maxBytes: maxBytes, lru: list.New(), byKey: map[snapKey]*list.Element{}}
}

// Get returns a sealed snapshot of the file open at src, whose identity
// (fstat facts and digest) is id. The snapshot's content hashes to
// id.SHA256 or Get fails with IDENTITY_DRIFT. The caller owns the returned
// file and must close it.
func (c *Cache) Get(src *os.File, id wire.FileIdentity) (*os.File, error) {
	k := snapKey{dev: id.Dev, ino: id.Ino, size: id.Size, mode: id.Mode, uid: id.UID, mtimeNs: id.MtimeNs, ctimeNs: id.CtimeNs}
	if len(id.SHA256) != len(k.sum) {
		panic("snapcache: internal error: snapshot of an unhashed file")
	}
	copy(k.sum[:], id.SHA256)
	c.mu.Lock()
	if e, ok := c.byKey[k]; ok {
		se := e.Value.(*snapEntry)
		if se.intact() {
			c.lru.MoveToFront(e)
			f, err := dupFile(se.f)
			c.mu.Unlock()
			return f, err
		}
		// Every action's copy shares the snapshot's inode: one that
		// changed (a target's chmod of its own executable) is never
		// handed out again.
		c.evict(e)
	}
	c.mu.Unlock()

	fd, sum, err := snapshot.Create(int(src.Fd()), int64(id.Size), "warrant:"+path.Base(id.Path))
	if err != nil {
		return nil, wire.Errorf(wire.CodeSandboxUnavailable, "cannot snapshot %s: %v", id.Path, err)
	}
	snap := os.NewFile(uintptr(fd), "snapshot:"+id.Path)
	if sum != k.sum {
		snap.Close()
		return nil, wire.Errorf(wire.CodeIdentityDrift, "%s changed after it was identified", id.Path)
	}
	out, err := dupFile(snap)
	if err != nil {
		snap.Close()
		return nil, err
	}
	c.insert(k, snap, int64(id.Size))
	return out, nil
}

func (c *Cache) insert(k snapKey, f *os.File, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; ok || size > c.maxBytes {
		f.Close()
		return
	}
	se := &snapEntry{key: k, f: f}
	var st unix.Stat_t
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil || unix.Fstat(int(f.Fd()), &st) != nil {
		f.Close()
		return
	}
	se.mode, se.seals = st.Mode, seals
	c.byKey[k] = c.lru.PushFront(se)
	c.bytes += size
	for c.lru.Len() > c.maxN || c.bytes > c.maxBytes {
		c.evict(c.lru.Back())
	}
}

func (c *Cache) evict(e *list.Element) {
	se := c.lru.Remove(e).(*snapEntry)
	delete(c.byKey, se.key)
	c.bytes -= int64(se.key.size)
	se.f.Close()
}

// Close drops every snapshot.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		c.evict(c.lru.Back())
	}
}

func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup snapshot: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
