package snapshot

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSnapshotIsImmutableAndDetached(t *testing.T) {
	content := bytes.Repeat([]byte("approved bytes\n"), 40000)
	path := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(path, content, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, sum, err := Create(int(f.Fd()), int64(len(content)), "prog")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if sum != sha256.Sum256(content) {
		t.Fatal("digest is not the digest of the copied bytes")
	}

	// The on-disk file is rewritten in place: the snapshot must not follow.
	if err := os.WriteFile(path, bytes.Repeat([]byte("X"), len(content)), 0o755); err != nil {
		t.Fatal(err)
	}
	// Writes, growth and shrinking of the snapshot itself are refused.
	if _, err := unix.Pwrite(fd, []byte("evil"), 0); err != unix.EPERM {
		t.Errorf("pwrite into sealed snapshot: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 1); err != unix.EPERM {
		t.Errorf("shrink sealed snapshot: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, 0); err != unix.EPERM {
		t.Errorf("changing seals: %v, want EPERM", err)
	}
	got, err := Verify(fd, int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	if got != sum {
		t.Fatal("sealed content changed")
	}
}

func TestVerifyRefusesUnsealedAndWrongSize(t *testing.T) {
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	unix.Pwrite(fd, []byte("abc"), 0)
	if _, err := Verify(fd, 3); err == nil {
		t.Fatal("an unsealed memfd was accepted")
	}
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, Seals)
	if _, err := Verify(fd, 4); err == nil {
		t.Fatal("a snapshot of the wrong size was accepted")
	}
	if _, err := Verify(fd, 3); err != nil {
		t.Fatalf("a sealed snapshot was refused: %v", err)
	}
}

func TestCreateRefusesAFileThatChangedSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(path, []byte("short"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for size, want := range map[int64]string{100: "shrank", 3: "grew"} {
		fd, _, err := Create(int(f.Fd()), size, "prog")
		if err == nil {
			unix.Close(fd)
			t.Fatalf("a 5-byte file was snapshotted as %d bytes", size)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("approved size %d: %v, want an error saying the file %s", size, err, want)
		}
	}
}
