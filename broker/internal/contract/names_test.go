package contract

import (
	"regexp"
	"strings"
	"testing"
)

// TestNamesMatchTheirExpressions: each name check accepts exactly what
// the regular expression it spells out accepts, on every string of up
// to three bytes from an alphabet around each class's edges, and on
// each length around its bound.
func TestNamesMatchTheirExpressions(t *testing.T) {
	checks := []struct {
		expr  string
		check func(string) bool
	}{
		{`^[a-z][a-z0-9-]{0,63}$`, contractName},
		{`^[a-z][a-z0-9-]{0,31}$`, slotName},
		{`^--?[A-Za-z0-9][A-Za-z0-9_.-]{0,61}$`, flagName},
		{`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`, bareName},
		{`^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}$`, makeTarget},
	}
	alphabet := []string{"a", "z", "A", "Z", "0", "9", "-", "_", ".", "+", "/", "%", "$", "=", " ", "\n", "`", "{", "@", "[", "é", "\xff", "\x00"}
	var inputs []string
	var grow func(s string, n int)
	grow = func(s string, n int) {
		inputs = append(inputs, s)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(s+c, n-1)
		}
	}
	grow("", 3)
	for _, n := range []int{30, 31, 32, 33, 60, 61, 62, 63, 64, 65, 126, 127, 128, 129} {
		for _, head := range []string{"a", "--a", "-a", "_"} {
			inputs = append(inputs, head+strings.Repeat("b", n-len(head)), head+strings.Repeat("b", n-len(head)-1)+"\n")
		}
	}
	for _, c := range checks {
		re := regexp.MustCompile(c.expr)
		for _, s := range inputs {
			if got, want := c.check(s), re.MatchString(s); got != want {
				t.Errorf("%s on %q: %v, the expression says %v", c.expr, s, got, want)
			}
		}
	}
}
