package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"warrant/receipt"
)

// loadKeys loads the receipt signing key and the separate output HMAC key
// from <state>/keys, creating them (directory 0700, files 0600) at first
// start. receipt.LoadOrCreateKeys refuses a key directory or file that
// anyone else can reach.
func loadKeys(d stateDirs) (*receipt.Keys, error) {
	k, err := receipt.LoadOrCreateKeys(d.keys)
	if err != nil {
		return nil, fmt.Errorf("load receipt keys: %w", err)
	}
	return k, nil
}

// existingKeys loads the keys of a state directory for reading the log,
// without creating any: a reader must never mint a key a broker did not.
func existingKeys(root string) (*receipt.Keys, error) {
	d := layout(root)
	for _, f := range []string{receipt.SigningKeyFile, receipt.MACKeyFile} {
		if _, err := os.Lstat(filepath.Join(d.keys, f)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("load receipt keys: %s has no %s; no broker has started there yet", d.keys, f)
			}
			return nil, fmt.Errorf("load receipt keys: %w", err)
		}
	}
	return loadKeys(d)
}

// Keys returns the broker's receipt keys: the signing key, and the output
// HMAC key that every stream recorder needs (Keys().MACKey()).
func (b *Broker) Keys() *receipt.Keys { return b.rlog.keys }
