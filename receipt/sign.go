package receipt

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Key files under the broker's keys/ directory (0700, files 0600). The
// directory lies outside every target's Landlock grants, so no target can
// read or replace them.
const (
	SigningKeyFile = "receipt-signing.ed25519" // 32-byte ed25519 seed
	MACKeyFile     = "output-hmac.key"         // 32 random bytes
)

// Keys holds the broker's receipt signing key and its separate output HMAC
// key. The two are never derived from each other.
type Keys struct {
	priv ed25519.PrivateKey
	mac  []byte
}

// LoadOrCreateKeys loads both keys from dir, creating dir (0700) and any
// missing key (0600) first. It refuses a directory or file that others
// can access, a symlink, or a key of the wrong size.
func LoadOrCreateKeys(dir string) (*Keys, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create key directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("stat key directory: %w", err)
	}
	if err := private(fi, true); err != nil {
		return nil, fmt.Errorf("check key directory %s: %w", dir, err)
	}
	seed, err := loadOrCreate(filepath.Join(dir, SigningKeyFile), ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	mac, err := loadOrCreate(filepath.Join(dir, MACKeyFile), MACKeySize)
	if err != nil {
		return nil, err
	}
	return &Keys{priv: ed25519.NewKeyFromSeed(seed), mac: mac}, nil
}

// private checks that fi is a directory (or regular file) owned by us and
// closed to group and others.
func private(fi fs.FileInfo, dir bool) error {
	switch {
	case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("unexpected file type %s", fi.Mode().Type())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("mode %o is open to group or others", fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not %d", st.Uid, os.Geteuid())
	}
	return nil
}

func loadOrCreate(path string, size int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return create(path, size)
	}
	if err != nil {
		return nil, fmt.Errorf("open key %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat key %s: %w", path, err)
	}
	if err := private(fi, false); err != nil {
		return nil, fmt.Errorf("check key %s: %w", path, err)
	}
	if fi.Size() != int64(size) {
		return nil, fmt.Errorf("check key %s: %d bytes, want %d", path, fi.Size(), size)
	}
	key := make([]byte, size)
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, fmt.Errorf("read key %s: %w", path, err)
	}
	return key, nil
}

func create(path string, size int) ([]byte, error) {
	key := make([]byte, size)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate key %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create key %s: %w", path, err)
	}
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("write key %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return key, nil
}

// Public returns the receipt verification key.
func (k *Keys) Public() ed25519.PublicKey { return k.priv.Public().(ed25519.PublicKey) }

// KeyID returns the DSSE key id of the signing key.
func (k *Keys) KeyID() string { return KeyID(k.Public()) }

// KeyID is the hex SHA-256 of an ed25519 public key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])
}

// MACKey returns a copy of the output HMAC key for recorders.
func (k *Keys) MACKey() []byte { return append([]byte(nil), k.mac...) }
