package identity

import (
	"sync"
	"time"

	"warrant/wire"
)

// digests remembers the SHA-256 of program files nobody but root can
// have changed since they were hashed, by their full stat identity
// (dev, ino, mode, uid, size, mtime, ctime), so that a submit of an
// unchanged /usr/local/go/bin/go does not read its 60 MB again.
//
// Only files for which the identity proves the bytes are remembered:
//
//   - owned by root, writable by neither group nor others (a POSIX ACL
//     that grants a write shows in the group bits), with this broker not
//     root: the broker's uid — and so every target, which runs as it
//     without capabilities — cannot write them, and root is trusted;
//     a file the broker's uid can write could be changed through a
//     mapping made writable before it was hashed, which does not always
//     move ctime;
//   - whose ctime is at least racyWindow before the hash began: on a
//     filesystem whose timestamps are coarser than the time between a
//     write and the hash, a write could leave ctime where it was (git's
//     "racily clean" rule).
//
// Any change by root moves ctime, which no one can set back: a changed
// file has another identity and is hashed again.
var digests = digestCache{m: map[statKey][]byte{}}

// racyWindow is how much older than the hash a remembered file's ctime
// must be.
const racyWindow = 2 * time.Second

// maxDigests bounds the cache; when it is full it starts again empty.
const maxDigests = 1024

type statKey struct {
	dev, ino, size uint64
	mode, uid      uint32
	mtime, ctime   int64
}

type digestCache struct {
	mu sync.Mutex
	m  map[statKey][]byte
}

func statKeyOf(id *wire.FileIdentity) statKey {
	return statKey{dev: id.Dev, ino: id.Ino, size: id.Size, mode: id.Mode, uid: id.UID, mtime: id.MtimeNs, ctime: id.CtimeNs}
}

// provable reports whether id's bytes are proven by its identity for a
// broker running as euid that began hashing at start.
func provable(id *wire.FileIdentity, euid int, start time.Time) bool {
	return euid != 0 && id.UID == 0 && id.Mode&0o022 == 0 && time.Unix(0, id.CtimeNs).Before(start.Add(-racyWindow))
}

// digest sets id.SHA256, for a broker running as euid: the remembered
// digest when id is provable and was hashed before, else the file's own,
// hashed through fd (and then remembered if provable). It must be called
// on an id just measured by fstat of fd.
func (c *digestCache) digest(fd int, id *wire.FileIdentity, euid int, hash func(int, *wire.FileIdentity) error) error {
	start := time.Now()
	ok := provable(id, euid, start)
	k := statKeyOf(id)
	c.mu.Lock()
	d := c.m[k]
	c.mu.Unlock()
	if ok && d != nil {
		id.SHA256 = d
		return nil
	}
	if err := hash(fd, id); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		if len(c.m) >= maxDigests {
			c.m = map[statKey][]byte{}
		}
		c.m[k] = id.SHA256
	}
	return nil
}
