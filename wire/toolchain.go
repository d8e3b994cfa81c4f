package wire

import (
	"fmt"
	"slices"

	"warrant/internal/closed"
)

// ToolchainKind names a toolchain layout the broker recognises around an
// executable (broker/internal/toolchain).
type ToolchainKind uint8

// The toolchain layouts.
const (
	ToolchainRustup ToolchainKind = iota + 1
	ToolchainNvm
	ToolchainPyenv
	ToolchainSdkman
	ToolchainAsdf
	ToolchainMise
	ToolchainVolta
	ToolchainGo
	ToolchainHomebrew
	ToolchainJDK
)

var toolchainKindNames = []string{"", "rustup", "nvm", "pyenv", "sdkman", "asdf", "mise", "volta", "go", "homebrew", "jdk"}

func (k ToolchainKind) names() []string              { return toolchainKindNames }
func (k ToolchainKind) String() string               { return closed.String(toolchainKindNames, k) }
func (k ToolchainKind) MarshalText() ([]byte, error) { return closed.Marshal(toolchainKindNames, k) }
func (k *ToolchainKind) UnmarshalText(text []byte) error {
	return closed.Unmarshal(toolchainKindNames, text, k)
}

// maxToolchainVars bounds the variables one toolchain sets.
const maxToolchainVars = 8

// Toolchain is the toolchain an identity's executable lies in, as the
// broker found it: its layout, the toolchain or version the layout names,
// and its root, which the policy grants read and execute (never write).
// Vars names the variables it set in the identity's environment (their
// values are there). It is part of the identity, so the fingerprint
// covers it beside the grant and the variables themselves.
type Toolchain struct {
	Kind ToolchainKind `cbor:"kind"`
	Name string        `cbor:"name"`
	Root string        `cbor:"root"`
	Vars []string      `cbor:"vars,omitempty"`
}

func (t *Toolchain) validate() error {
	err := firstErr(checkEnum(t.Kind), checkName("toolchain.name", t.Name), checkAbs("toolchain.root", t.Root),
		checkLen("toolchain.vars", len(t.Vars), maxToolchainVars))
	for i := 0; err == nil && i < len(t.Vars); i++ {
		err = at(checkName("", t.Vars[i]), "toolchain.vars", i)
	}
	return err
}

// validateToolchain checks the identity's toolchain, when it has one, and
// that each variable it names is in the environment.
func (c *CommandIdentity) validateToolchain() error {
	if c.Toolchain == nil {
		return nil
	}
	if err := c.Toolchain.validate(); err != nil {
		return err
	}
	for _, v := range c.Toolchain.Vars {
		if !slices.ContainsFunc(c.Env, func(kv EnvVar) bool { return kv.Name == v }) {
			return fmt.Errorf("toolchain.vars: %s is not in the environment", v)
		}
	}
	return nil
}
