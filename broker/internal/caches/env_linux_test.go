package caches

import (
	"path/filepath"
	"slices"
	"testing"

	"warrant/wire"
)

// TestToolchainCacheVariables: cargo's home and Gradle's user home are
// directories of every cache, uv copies instead of hard linking, and none
// of those names can be declared.
func TestToolchainCacheVariables(t *testing.T) {
	s := newStore(t, false)
	c, err := s.For(wire.DirIdentity{Path: "/w/a", Dev: 1, Ino: 2})
	must(t, err)
	e := env(c)
	for name, sub := range map[string]string{"CARGO_HOME": "cargo-home", "GRADLE_USER_HOME": "gradle"} {
		if e[name] != filepath.Join(c.Dir, sub) {
			t.Errorf("%s=%q, want %s", name, e[name], filepath.Join(c.Dir, sub))
		}
	}
	if e["UV_LINK_MODE"] != "copy" {
		t.Errorf("UV_LINK_MODE=%q, want copy", e["UV_LINK_MODE"])
	}
	for _, n := range []string{"CARGO_HOME", "GRADLE_USER_HOME", "UV_LINK_MODE"} {
		if !slices.Contains(Names(), n) {
			t.Errorf("%s is not among the names a cache sets", n)
		}
	}
}
