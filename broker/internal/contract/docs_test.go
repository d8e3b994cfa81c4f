package contract

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocsExamples checks the examples of docs/contracts.md: each block
// after "<!-- example: accepted -->" decodes, each after
// `<!-- example: refused "REASON" -->` is refused saying REASON, and
// each after "<!-- parse: NAME ARGV -->" is exactly the parse the
// library's NAME makes of ARGV.
func TestDocsExamples(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/contracts.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)<!-- (example|parse): (.*?) -->\n```json\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 6 {
		t.Fatalf("found %d examples in docs/contracts.md", len(blocks))
	}
	for _, b := range blocks {
		what, body := string(b[2]), b[3]
		switch {
		case string(b[1]) == "parse":
			fields := strings.Fields(what)
			c, err := Builtin(fields[0])
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.Match(fields[1:], libraryTree(t), gitProtected)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got, _ := json.Marshal(p)
			var want bytes.Buffer
			if err := json.Compact(&want, body); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("parse of %s is\n%s\nthe docs say\n%s", what, got, want.Bytes())
			}
		case what == "accepted":
			if _, err := Decode(body); err != nil {
				t.Errorf("%s: %v", body, err)
			}
		case strings.HasPrefix(what, "refused "):
			reason, err := strconv.Unquote(strings.TrimPrefix(what, "refused "))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if _, err := Decode(body); err == nil || !strings.Contains(err.Error(), reason) {
				t.Errorf("%s: error %v, want it to say %q", body, err, reason)
			}
		default:
			t.Fatalf("unknown example marker %q", what)
		}
	}
}
