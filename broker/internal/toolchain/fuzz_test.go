package toolchain

import (
	"strings"
	"testing"
)

// FuzzToolchainMarkers: the marker parsers never panic, and return only
// what the file says in the shape the identity takes: rustup's default is
// a quoted value of the file on one line, pyenv's words have no blank,
// a Go version is printable ASCII starting go1 or "devel ", a Java
// version a name (one path component of safe bytes).
func FuzzToolchainMarkers(f *testing.F) {
	f.Fuzz(func(t *testing.T, file string) {
		if d := defaultToolchain(file); d != "" && (!strings.Contains(file, "\""+d+"\"") || strings.Contains(d, "\n")) {
			t.Fatalf("default toolchain %q is not a quoted value on a line of the file", d)
		}
		for _, w := range versionWords(file) {
			if w == "" || strings.ContainsAny(w, " \t\n\r\v\f") {
				t.Fatalf("version word %q", w)
			}
		}
		if g, ok := goVersionOf(file); ok {
			if len(g) > 128 || !strings.HasPrefix(g, "go1") && !strings.HasPrefix(g, "devel ") || strings.ContainsFunc(g, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Fatalf("go version %q", g)
			}
		}
		if j, ok := javaVersionOf(file); ok && !validName(j) {
			t.Fatalf("java version %q", j)
		}
	})
}
