package closed

import "fmt"

// Enum is the shape of every closed enum.
type Enum interface{ ~uint8 }

// Valid reports whether e is one of the values names lists: not zero and
// within the table.
func Valid[E Enum](names []string, e E) bool { return e != 0 && int(e) < len(names) }

// String returns e's name, or "invalid(N)".
func String[E Enum](names []string, e E) string {
	if !Valid(names, e) {
		return fmt.Sprintf("invalid(%d)", uint8(e))
	}
	return names[e]
}

// Marshal returns e's name, refusing an invalid value.
func Marshal[E Enum](names []string, e E) ([]byte, error) {
	if !Valid(names, e) {
		return nil, fmt.Errorf("encode %T: invalid value %d", e, uint8(e))
	}
	return []byte(names[e]), nil
}

// Unmarshal sets *e to the value named text, refusing unknown names.
func Unmarshal[E Enum](names []string, text []byte, e *E) error {
	for i := 1; i < len(names); i++ {
		if names[i] == string(text) {
			*e = E(i)
			return nil
		}
	}
	return fmt.Errorf("decode %T: unknown value %q", *e, text)
}
