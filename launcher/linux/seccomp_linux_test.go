package linux

import (
	"bytes"
	"testing"
)

// The digest in Ready is only meaningful if the same policy always
// compiles to the same programs.
func TestPolicyCompilesDeterministically(t *testing.T) {
	a, err := compilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	b, err := compilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 || !bytes.Equal(a[0], b[0]) || !bytes.Equal(a[1], b[1]) {
		t.Fatal("compiling the seccomp policy twice gave different programs")
	}
	for _, p := range a {
		if _, err := decodeBPF(p); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkCompilePolicy is the per-launch cost of compiling the filter
// with libseccomp (compare with BenchmarkLaunchTrue in integration/).
func BenchmarkCompilePolicy(b *testing.B) {
	for b.Loop() {
		if _, err := compilePolicy(); err != nil {
			b.Fatal(err)
		}
	}
}
