package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"warrant/receipt"
)

// LoadKeys loads the receipt signing key and the separate output HMAC key
// from <state>/keys, creating them (directory 0700, files 0600) at first
// start. receipt.LoadOrCreateKeys refuses a key directory or file that
// anyone else can reach.
func LoadKeys(d Dirs) (*receipt.Keys, error) {
	k, err := receipt.LoadOrCreateKeys(d.Keys)
	if err != nil {
		return nil, fmt.Errorf("load receipt keys: %w", err)
	}
	return k, nil
}

// ExistingKeys loads the keys of the state directory root for reading
// the log, without creating any: a reader must never mint a key a broker
// did not.
func ExistingKeys(root string) (*receipt.Keys, error) {
	d := Layout(root)
	for _, f := range []string{receipt.SigningKeyFile, receipt.MACKeyFile} {
		if _, err := os.Lstat(filepath.Join(d.Keys, f)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("load receipt keys: %s has no %s; no broker has started there yet", d.Keys, f)
			}
			return nil, fmt.Errorf("load receipt keys: %w", err)
		}
	}
	return LoadKeys(d)
}
