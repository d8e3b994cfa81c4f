package wire

import "fmt"

// An enum is a closed set of values numbered from 1; zero is never valid,
// so a missing field can never decode to a default. Each enum type keeps
// its names in a table indexed by value and encodes as its name.
type enum interface{ ~uint8 }

func enumString[E enum](names []string, e E) string {
	if e == 0 || int(e) >= len(names) {
		return fmt.Sprintf("invalid(%d)", uint8(e))
	}
	return names[e]
}

func enumMarshal[E enum](names []string, e E) ([]byte, error) {
	if e == 0 || int(e) >= len(names) {
		return nil, fmt.Errorf("wire: encode %T: invalid value %d", e, uint8(e))
	}
	return []byte(names[e]), nil
}

func enumUnmarshal[E enum](names []string, text []byte, e *E) error {
	for i := 1; i < len(names); i++ {
		if names[i] == string(text) {
			*e = E(i)
			return nil
		}
	}
	return fmt.Errorf("wire: decode %T: unknown value %q", *e, text)
}

// ParseEnum returns the enum value whose wire name is text, for
// command-line flags and human input.
func ParseEnum[E interface {
	enum
	names() []string
}](text string) (E, error) {
	var e E
	err := enumUnmarshal(e.names(), []byte(text), &e)
	return e, err
}
