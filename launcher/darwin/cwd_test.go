package darwin

import (
	"testing"

	"warrant/wire"
)

func TestCheckCwd(t *testing.T) {
	for _, ok := range []string{".", "a", "a/b", "src/cmd/x", "a b", "..a", "a..", "...", "dir.d/.hidden"} {
		if e := checkCwd(ok); e != nil {
			t.Errorf("checkCwd(%q) refused a plain relative path: %v", ok, e)
		}
	}
	for _, bad := range []string{
		"", "/", "/etc", "/abs/path", "..", "../x", "a/..", "a/../b", "a/../../x",
		"./a", "a/.", "a/./b", "a//b", "a/", "//a", "a\x00b", "a/\xff",
	} {
		e := checkCwd(bad)
		if e == nil {
			t.Errorf("checkCwd(%q) accepted", bad)
			continue
		}
		if e.Code != wire.CodePathInvalid {
			t.Errorf("checkCwd(%q) = %v, want PATH_INVALID", bad, e)
		}
	}
}

// TestBadComponent exercises the second filter on its own: it must refuse
// these even if wire.CheckRelPath ever stopped doing so.
func TestBadComponent(t *testing.T) {
	for p, want := range map[string]string{
		"..": "..", "a/..": "..", "../a": "..", "a/../b": "..",
		".": ".", "a/.": ".", "./a": ".",
		"a//b": "", "a/": "", "/a": "",
	} {
		c, bad := badComponent(p)
		if !bad || c != want {
			t.Errorf("badComponent(%q) = %q, %v; want %q, true", p, c, bad, want)
		}
	}
	for _, p := range []string{"a", "a/b", "..a/b.", "a b/c"} {
		if c, bad := badComponent(p); bad {
			t.Errorf("badComponent(%q) flagged %q", p, c)
		}
	}
}
