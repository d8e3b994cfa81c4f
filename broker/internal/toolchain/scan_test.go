package toolchain

import (
	"path/filepath"
	"slices"
	"testing"
)

// Candidates names a program of each toolchain at the known places (a
// manager's proxy or shim, each version's first program), and Find
// recognises each; Reach records a program as identity does.
func TestCandidates(t *testing.T) {
	dir, h := rustupTree(t, "default_toolchain = \""+stable+"\"\n")
	build(t, dir, map[string]string{
		".pyenv/shims/python3*":                         "#!/bin/sh\n",
		".pyenv/versions/3.12.1/bin/python3*":           "",
		".pyenv/version":                                "3.12.1\n",
		".sdkman/candidates/java/21.0.2-tem/bin/java*":  "",
		".sdkman/candidates/java/21.0.2-tem/bin/jar*":   "",
		".sdkman/candidates/java/current -> 21.0.2-tem": "",
		".asdf/installs/nodejs/20.11.0/bin/node*":       "",
		".asdf/installs/nodejs/20.11.0/bin/readme":      "not a program",
	})
	got := Candidates(h)
	d := canon(t, dir)
	for _, p := range []string{
		filepath.Join(dir, ".cargo/bin/cargo"),
		filepath.Join(d, ".rustup/toolchains", stable, "bin/cargo"),
		filepath.Join(d, ".pyenv/shims/python3"),
		filepath.Join(d, ".pyenv/versions/3.12.1/bin/python3"),
		filepath.Join(d, ".sdkman/candidates/java/21.0.2-tem/bin/jar"),
		filepath.Join(d, ".asdf/installs/nodejs/20.11.0/bin/node"),
	} {
		if !slices.Contains(got, p) {
			t.Errorf("Candidates lacks %s: %q", p, got)
			continue
		}
		paths, err := Reach(p)
		if err != nil {
			t.Fatal(err)
		}
		if f, why := Find(h, paths); f == nil {
			t.Errorf("%s: no toolchain: %s", p, why)
		}
	}
	if slices.ContainsFunc(got, func(p string) bool { return filepath.Base(filepath.Dir(filepath.Dir(p))) == "current" }) {
		t.Errorf("Candidates lists SDKMAN!'s current link: %q", got)
	}
	paths, err := Reach(filepath.Join(dir, ".cargo/bin/cargo"))
	if err != nil || !slices.Equal(paths, []string{filepath.Join(d, ".cargo/bin/cargo"), filepath.Join(d, ".cargo/bin/rustup")}) {
		t.Errorf("Reach: %q, %v", paths, err)
	}
}
