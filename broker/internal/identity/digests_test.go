package identity

import (
	"bytes"
	"os"
	"testing"
	"time"

	"warrant/internal/fsid"
	"warrant/wire"
)

// Only a file nobody but root can change, whose ctime is older than the
// racy window, has its bytes proven by its identity, and only for a
// broker that is not root.
func TestProvable(t *testing.T) {
	now := time.Now()
	old := now.Add(-time.Hour).UnixNano()
	root := wire.FileIdentity{UID: 0, Mode: 0o100755, CtimeNs: old}
	for _, c := range []struct {
		name string
		edit func(*wire.FileIdentity)
		euid int
		want bool
	}{
		{"root's 0755, broker uid 1000", func(*wire.FileIdentity) {}, 1000, true},
		{"a root broker", func(*wire.FileIdentity) {}, 0, false},
		{"the broker's own file", func(f *wire.FileIdentity) { f.UID = 1000 }, 1000, false},
		{"another user's file", func(f *wire.FileIdentity) { f.UID = 1001 }, 1000, false},
		{"group-writable (or an ACL granting a write)", func(f *wire.FileIdentity) { f.Mode = 0o100775 }, 1000, false},
		{"writable by others", func(f *wire.FileIdentity) { f.Mode = 0o100757 }, 1000, false},
		{"changed within the racy window", func(f *wire.FileIdentity) { f.CtimeNs = now.Add(-racyWindow / 2).UnixNano() }, 1000, false},
	} {
		id := root
		c.edit(&id)
		if got := provable(&id, c.euid, now); got != c.want {
			t.Errorf("%s: provable %v, want %v", c.name, got, c.want)
		}
	}
}

// The cache hashes a provable file once per identity, a changed one (its
// ctime moved) again, and any other file at every submit.
func TestDigestCacheRemembersOnlyWhatIsProven(t *testing.T) {
	c := digestCache{m: map[statKey][]byte{}}
	hashes := 0
	hash := func(_ int, id *wire.FileIdentity) error {
		hashes++
		id.SHA256 = bytes.Repeat([]byte{byte(hashes)}, 32)
		return nil
	}
	old := time.Now().Add(-time.Hour).UnixNano()
	measure := func(id wire.FileIdentity) []byte {
		t.Helper()
		if err := c.digest(-1, &id, 1000, hash); err != nil {
			t.Fatal(err)
		}
		return id.SHA256
	}
	usr := wire.FileIdentity{Path: "/usr/bin/x", Dev: 1, Ino: 2, Size: 10, UID: 0, Mode: 0o100755, MtimeNs: old, CtimeNs: old}
	first := measure(usr)
	if again := measure(usr); !bytes.Equal(again, first) || hashes != 1 {
		t.Fatalf("an unchanged root file was hashed %d times", hashes)
	}
	changed := usr
	changed.CtimeNs++
	if d := measure(changed); bytes.Equal(d, first) || hashes != 2 {
		t.Fatalf("a file whose ctime moved was not hashed again (%d hashes)", hashes)
	}
	mine := usr
	mine.UID = 1000
	measure(mine)
	measure(mine)
	if hashes != 4 {
		t.Fatalf("the broker's own file was remembered: %d hashes, want 4", hashes)
	}
}

// BenchmarkDigestGo is measuring the go command (60 MB) at a submit:
// hashed, as every submit did and as any file the broker's uid could
// change still is, beside remembered, as a root-owned toolchain is for a
// broker that is not root (its identity measured by the same fstat).
func BenchmarkDigestGo(b *testing.B) {
	const goBin = "/usr/local/go/bin/go"
	f, err := os.Open(goBin)
	if err != nil {
		b.Skipf("skip: %s is not on this host: %v", goBin, err)
	}
	defer f.Close()
	id, err := fsid.Stat(int(f.Fd()), goBin)
	if err != nil {
		b.Fatal(err)
	}
	if !provable(&id, 1000, time.Now()) {
		b.Skipf("skip: %s is not root's and read-only to others (uid %d, mode %o)", goBin, id.UID, id.Mode)
	}
	for _, c := range []struct {
		name string
		euid int
	}{{"hashed", 0}, {"remembered", 1000}} {
		b.Run(c.name, func(b *testing.B) {
			cache := digestCache{m: map[statKey][]byte{}}
			for b.Loop() {
				again, err := fsid.Stat(int(f.Fd()), goBin)
				if err == nil {
					err = cache.digest(int(f.Fd()), &again, c.euid, fsid.Digest)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
