package logtext

import (
	"bytes"
	"testing"
)

// TestWrite checks that a log has exactly its size, that the same seed
// gives the same bytes and another seed others, and that what it says
// redaction leaves differs from the raw line exactly for credential lines.
func TestWrite(t *testing.T) {
	const size = 1<<20 + 7
	var a, b, c bytes.Buffer
	rules := map[string]int{}
	err := Write(&a, size, 1, func(raw, red []byte, rule string) {
		if len(raw) > MaxLine || raw[len(raw)-1] != '\n' {
			t.Fatalf("line of %d bytes not ending in a newline: %q", len(raw), raw)
		}
		if (rule != "") == bytes.Equal(raw, red) {
			t.Fatalf("rule %q for %q → %q", rule, raw, red)
		}
		rules[rule]++
	})
	if err != nil || a.Len() != size {
		t.Fatalf("wrote %d of %d bytes: %v", a.Len(), size, err)
	}
	if len(rules) != len(secrets)+1 {
		t.Fatalf("lines by rule %v: not every credential shape appeared", rules)
	}
	Write(&b, size, 1, nil)
	Write(&c, size, 2, nil)
	if !bytes.Equal(a.Bytes(), b.Bytes()) || bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("the log is not a function of its seed")
	}
}
