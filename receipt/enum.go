package receipt

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error about a receipt's content.
var ErrInvalid = errors.New("invalid receipt")

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkHex accepts exactly a lowercase hex SHA-256.
func checkHex(field, s string) error {
	if b, err := hex.DecodeString(s); err != nil || len(b) != 32 || hex.EncodeToString(b) != s {
		return errorf("%s: not a lowercase hex SHA-256", field)
	}
	return nil
}
