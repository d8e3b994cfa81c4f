package view

import "warrant/wire"

// Toolchain is the toolchain an identity's executable lies in
// (wire.Toolchain): its layout, name, root (granted read+exec) and the
// variables it set.
type Toolchain struct {
	Kind string   `json:"kind"`
	Name string   `json:"name"`
	Root string   `json:"root"`
	Vars []string `json:"vars"`
}

// ToolchainOf is the view of t, nil for none.
func ToolchainOf(t *wire.Toolchain) *Toolchain {
	if t == nil {
		return nil
	}
	return &Toolchain{Kind: t.Kind.String(), Name: t.Name, Root: t.Root, Vars: NonNil(t.Vars)}
}
