//go:build linux

package identity

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkProtectedCheck is the overlap check every submit makes, with
// the broker's shape of places: the root and home, a state directory and
// the four below it, two binary directories, the system roots and the
// kernel's filesystems, for a workspace four directories below /tmp.
func BenchmarkProtectedCheck(b *testing.B) {
	top := b.TempDir()
	state := filepath.Join(top, "state")
	ws := filepath.Join(top, "src", "project")
	places := []Place{{Name: "root", Path: "/", Rule: Itself}}
	for _, d := range []string{state, ws, filepath.Join(top, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	places = append(places, Place{Name: "state", Path: state, Rule: Overlap}, Place{Name: "bin", Path: filepath.Join(top, "bin"), Rule: Overlap})
	for _, sub := range []string{"keys", "run", "actions", "caches"} {
		d := filepath.Join(state, sub)
		if err := os.Mkdir(d, 0o700); err != nil {
			b.Fatal(err)
		}
		places = append(places, Place{Name: sub, Path: d, Rule: Overlap})
	}
	for _, p := range []string{"/usr", "/etc", "/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/boot", "/var"} {
		places = append(places, Place{Name: "system", Path: p, Rule: ItOrAbove, Optional: true})
	}
	for _, p := range []string{"/proc", "/sys", "/dev"} {
		places = append(places, Place{Name: "kernel", Path: p, Rule: ItOrBelow, Optional: true})
	}
	p, err := Protect(places)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	f, err := os.Open(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for b.Loop() {
		if err := p.check(f, ws); err != nil {
			b.Fatal(err)
		}
	}
}
