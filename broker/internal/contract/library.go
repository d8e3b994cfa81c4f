package contract

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// The shipped library: one file per contract, named for it.
//
//go:embed library/*.json
var library embed.FS

// Library lists the names of the shipped contracts, sorted.
func Library() []string {
	entries, err := fs.ReadDir(library, "library")
	if err != nil {
		panic("contract: internal error: read library: " + err.Error())
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	slices.Sort(names)
	return names
}

// Builtin is the shipped contract named name.
func Builtin(name string) (*Contract, error) {
	if !slices.Contains(Library(), name) {
		return nil, fmt.Errorf("contract %q is not in the library (%s)", name, strings.Join(Library(), ", "))
	}
	b, err := library.ReadFile("library/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("read contract %q: %w", name, err)
	}
	c, err := Decode(b)
	if err != nil {
		return nil, err
	}
	if c.Name() != name {
		return nil, fmt.Errorf("contract %q: the library file names it %q", name, c.Name())
	}
	return c, nil
}
