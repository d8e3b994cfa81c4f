package fsid

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func openPath(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// A directory removed and recreated at the same path is a different
// directory, even when the filesystem hands out the same inode number.
func TestDirRecreatedIsNotTheSame(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cwd")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	before, err := Dir(openPath(t, p), "cwd")
	if err != nil {
		t.Fatal(err)
	}
	if before.BirthNs == 0 {
		t.Skipf("skip: the filesystem of %s records no birth time; (dev, ino, mnt_id) is all there is", p)
	}
	again, err := Dir(openPath(t, p), "cwd")
	if err != nil || !again.Same(before) {
		t.Fatalf("the same directory measured twice differs: %+v %+v %v", before, again, err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	after, err := Dir(openPath(t, p), "cwd")
	if err != nil {
		t.Fatal(err)
	}
	if after.Same(before) {
		t.Fatalf("a recreated directory has the approved identity %+v", after)
	}
	t.Logf("inode reused: %v", after.Ino == before.Ino)
}

func TestFileHashesExactlyItsContent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prog")
	content := []byte("#!/bin/sh\necho approved\n")
	if err := os.WriteFile(p, content, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := File(int(f.Fd()), p)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(content); string(id.SHA256) != string(sum[:]) || id.Size != uint64(len(content)) {
		t.Fatalf("identity %+v does not describe the content", id)
	}
	if _, err := Dir(int(f.Fd()), p); err == nil {
		t.Fatal("a regular file was accepted as a directory")
	}
	d := openPath(t, filepath.Dir(p))
	if _, err := Stat(d, "dir"); err == nil {
		t.Fatal("a directory was accepted as a regular file")
	}
}

// CopyExact reads every size around its buffer's edges exactly, and
// refuses an approved size one byte off either way.
func TestCopyExactSizes(t *testing.T) {
	for _, size := range []int{0, 1, copyChunk - 1, copyChunk, copyChunk + 1, 2*copyChunk + 7} {
		content := make([]byte, size)
		for i := range content {
			content[i] = byte(i * 7)
		}
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if err := CopyExact(h, int(f.Fd()), int64(size)); err != nil {
			t.Errorf("%d bytes: %v", size, err)
		} else if sum := sha256.Sum256(content); string(h.Sum(nil)) != string(sum[:]) {
			t.Errorf("%d bytes: the digest is not that of the content", size)
		}
		for _, c := range []struct {
			size int64
			want string
		}{{int64(size) - 1, "grew"}, {int64(size) + 1, "shrank"}} {
			if c.size < 0 {
				continue
			}
			err := CopyExact(sha256.New(), int(f.Fd()), c.size)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%d bytes copied as %d: %v, want an error saying the file %s", size, c.size, err, c.want)
			}
		}
		f.Close()
	}
}
