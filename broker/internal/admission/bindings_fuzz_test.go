package admission

import (
	"maps"
	"path"
	"slices"
	"strings"
	"testing"
)

// FuzzBindingsFile: parsing <state>/bindings either fails with a sentence
// naming the file and a line, and nothing else, or gives absolute, clean
// paths without NUL or an outer blank, that parse back to the same set
// when written one a line.
func FuzzBindingsFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		listed, err := parseBindingsFile("/s/bindings", b)
		if err != nil {
			if listed != nil || !strings.HasPrefix(err.Error(), "/s/bindings line ") {
				t.Fatalf("error %q with %d paths", err, len(listed))
			}
			return
		}
		for p := range listed {
			if !path.IsAbs(p) || path.Clean(p) != p || strings.ContainsAny(p, "\x00\r\n") || strings.TrimRight(p, " \t") != p {
				t.Fatalf("parsed %q", p)
			}
		}
		again, err := parseBindingsFile("/s/bindings", []byte(strings.Join(slices.Sorted(maps.Keys(listed)), "\n")))
		if err != nil || !maps.Equal(again, listed) {
			t.Fatalf("written back and parsed: %v, %v; want %v", again, err, listed)
		}
	})
}
