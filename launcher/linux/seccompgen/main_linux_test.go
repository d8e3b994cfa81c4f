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

// The same policy must always compile to the same programs, or the digest
// in Ready would mean nothing.
func TestPolicyCompilesDeterministically(t *testing.T) {
	a, _, err := compilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := compilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatal("compiling the seccomp policy twice gave different programs")
		}
	}
}

// BenchmarkCompilePolicy is what compiling per launch would cost.
func BenchmarkCompilePolicy(b *testing.B) {
	for b.Loop() {
		if _, _, err := compilePolicy(); err != nil {
			b.Fatal(err)
		}
	}
}
