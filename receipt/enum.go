package receipt

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// Closed enums of this package follow wire's rule: zero is never a valid
// value when the field is present, and decoding an unknown name fails.
type enum interface{ ~uint8 }

func name[E enum](names []string, e E) string {
	if e == 0 || int(e) >= len(names) {
		return fmt.Sprintf("invalid(%d)", uint8(e))
	}
	return names[e]
}

func marshalName[E enum](names []string, e E) ([]byte, error) {
	if e == 0 || int(e) >= len(names) {
		return nil, fmt.Errorf("encode %T: invalid value %d", e, uint8(e))
	}
	return []byte(names[e]), nil
}

func unmarshalName[E enum](names []string, text []byte, e *E) error {
	for i := 1; i < len(names); i++ {
		if names[i] == string(text) {
			*e = E(i)
			return nil
		}
	}
	return fmt.Errorf("decode %T: unknown value %q", *e, text)
}

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
