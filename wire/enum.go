package wire

import "warrant/internal/closed"

// An enum is a closed set of values numbered from 1 (internal/closed);
// each enum type keeps its names in a table indexed by value and encodes
// as its name.
type enum = closed.Enum

// namedEnum is an enum of this package: one that knows its names table.
type namedEnum interface {
	enum
	names() []string
}

// ParseEnum returns the enum value whose wire name is text, for
// command-line flags and human input.
func ParseEnum[E namedEnum](text string) (E, error) {
	var e E
	err := closed.Unmarshal(e.names(), []byte(text), &e)
	return e, err
}
