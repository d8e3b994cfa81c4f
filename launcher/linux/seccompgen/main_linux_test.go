package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The programs the launcher embeds must be exactly what libseccomp
// produces from this policy today; regenerate with `go generate
// ./launcher/linux` after changing the policy or libseccomp.
func TestEmbeddedProgramsAreLibseccompOutput(t *testing.T) {
	progs, _, err := compilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range programNames {
		path := filepath.Join("..", programFile(name))
		embedded, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			t.Skipf("skip: no program generated for this architecture (%s): %v", path, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(embedded, progs[i]) {
			t.Errorf("%s differs from libseccomp's output for the policy: run go generate ./launcher/linux", path)
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
