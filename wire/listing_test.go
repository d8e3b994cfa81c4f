package wire

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestListedArgv: a listing carries whole arguments while they fit in
// MaxListedArgv bytes, then the next one cut at a UTF-8 boundary, and
// says so; what it carries passes the listing's own check.
func TestListedArgv(t *testing.T) {
	short := []string{"test", "./...", ""}
	if got, cut := ListedArgv(short); !slices.Equal(got, short) || cut {
		t.Errorf("short argv listed as %q (cut %v)", got, cut)
	}
	long := []string{strings.Repeat("a", MaxListedArgv-1), "ü" + strings.Repeat("b", 10), "c"}
	got, cut := ListedArgv(long)
	if !cut || len(got) != 2 || got[0] != long[0] || got[1] != "" {
		t.Errorf("long argv listed as %d elements %q… (cut %v); want the first whole and the ü not split", len(got), got[len(got)-1], cut)
	}
	for _, g := range got {
		if !utf8.ValidString(g) {
			t.Errorf("listed %q is not valid UTF-8", g)
		}
	}
	if err := checkListedArgv(got); err != nil {
		t.Errorf("listed argv fails its check: %v", err)
	}
	if err := checkListedArgv(long); err == nil {
		t.Error("an argv over MaxListedArgv passes the listing check")
	}
}

// TestTrimCwd: trailing slashes go, nothing else is rewritten, and what
// is left is checked as before.
func TestTrimCwd(t *testing.T) {
	for in, want := range map[string]string{"sub/": "sub", "sub//": "sub", "a/b/": "a/b", "./": ".", "/": "/", "": "",
		"./sub": "./sub", "a//b/": "a//b", "../": "..", "sub": "sub"} {
		if got := TrimCwd(in); got != want {
			t.Errorf("TrimCwd(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"./sub", "a//b", "..", "/tmp", "a/../b"} {
		if CheckRelPath(TrimCwd(bad)) == nil {
			t.Errorf("%q passes once trimmed", bad)
		}
	}
}
