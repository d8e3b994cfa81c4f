package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The programs the launcher embeds, and the disassembly reviewers read,
// must be exactly what seccompgen produces from this policy and libseccomp
// today; regenerate with `go generate ./launcher/linux` after changing
// either.
func TestCommittedFilesAreSeccompgenOutput(t *testing.T) {
	files, err := outputs()
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join("..", programFile(programNames[0]))
	if _, err := os.Stat(first); os.IsNotExist(err) {
		t.Skipf("skip: no program generated for this architecture: %v", err)
	}
	for name, want := range files {
		path := filepath.Join("..", name)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from seccompgen's output for the policy: run go generate ./launcher/linux", path)
		}
	}
}

// BenchmarkCompilePolicy is what compiling the filter at every launch
// would cost; it is why the programs are compiled at build time.
func BenchmarkCompilePolicy(b *testing.B) {
	for b.Loop() {
		if _, _, err := compilePolicy(); err != nil {
			b.Fatal(err)
		}
	}
}
