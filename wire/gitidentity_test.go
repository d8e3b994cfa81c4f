package wire

import (
	"strings"
	"testing"
)

// A git identity holds one config line's worth per value: what git would
// trim, split or take as the email's delimiters is refused, and so is an
// identity holding one.
func TestGitIdentityCheck(t *testing.T) {
	ok := GitIdentity{Name: "Ada Lovelace", Email: "ada@example.org"}
	if err := ok.Check(); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, bad := range []GitIdentity{
		{Name: "", Email: "a@b"},
		{Name: "Ada", Email: ""},
		{Name: "Ada\n[alias]\n\tx = !evil", Email: "a@b"},
		{Name: "Ada", Email: "a@b\x00"},
		{Name: "Ada\x7f", Email: "a@b"},
		{Name: "Ada", Email: "<a@b>"},
		{Name: " Ada", Email: "a@b"},
		{Name: "Ada", Email: "a@b\t"},
		{Name: strings.Repeat("a", MaxGitIdentity+1), Email: "a@b"},
		{Name: "Ada\xff", Email: "a@b"},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%q: accepted", bad)
		}
		id := sampleIdentity(false)
		id.GitIdentity = &bad
		if err := id.validate(); err == nil {
			t.Errorf("an identity with git identity %q validates", bad)
		}
	}
	id := sampleIdentity(false)
	id.GitIdentity = &ok
	if err := id.validate(); err != nil {
		t.Fatalf("an identity with %+v: %v", ok, err)
	}
}
