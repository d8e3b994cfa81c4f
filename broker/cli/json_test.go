package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"warrant/broker/view"
	"warrant/internal/jsonschema"
)

// Every example of docs/json.md validates against the schema it names,
// and every schema but common's has one.
func TestJSONDocExamples(t *testing.T) {
	schemas, err := jsonschema.Load("../../docs/schemas")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("(?s)<!-- example: ([a-z0-9.]+) -->\n```json\n(.*?)\n```").FindAllSubmatch(doc, -1)
	if len(examples) == 0 {
		t.Fatal("docs/json.md has no examples")
	}
	has := map[string]bool{"common.v1.json": true}
	for _, ex := range examples {
		file := string(ex[1])
		if err := schemas.Validate(file, ex[2]); err != nil {
			t.Errorf("the example of %s in docs/json.md: %v", file, err)
		}
		has[file] = true
	}
	for _, f := range schemas.Files() {
		if !has[f] {
			t.Errorf("docs/json.md has no example of %s", f)
		}
	}
}

// Document puts the schema first, keeps every member of the view, and
// ends with a newline; an empty view is just the schema.
func TestDocument(t *testing.T) {
	got, err := view.Document("warrant.x/v1", struct {
		B *string `json:"b"`
		A []int   `json:"a"`
	}{A: []int{}})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"schema\": \"warrant.x/v1\",\n  \"b\": null,\n  \"a\": []\n}\n"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, err := view.Document("warrant.y/v1", struct{}{}); err != nil || string(got) != "{\n  \"schema\": \"warrant.y/v1\"\n}\n" {
		t.Fatalf("empty view: %q %v", got, err)
	}
}

// Times are UTC with all nine fractional digits, whatever the zone and
// however many of them are zero.
func TestTimeLayout(t *testing.T) {
	zone := time.FixedZone("x", 5*3600)
	for in, want := range map[time.Time]string{
		time.Date(2026, 12, 1, 16, 12, 13, 123456789, zone): "2026-12-01T11:12:13.123456789Z",
		time.Date(2026, 12, 1, 11, 12, 13, 0, time.UTC):     "2026-12-01T11:12:13.000000000Z",
		time.Date(2026, 12, 1, 11, 12, 13, 100, time.UTC):   "2026-12-01T11:12:13.000000100Z",
	} {
		if got := view.Time(in); got != want || !strings.HasSuffix(got, "Z") {
			t.Errorf("Time(%v) = %s, want %s", in, got, want)
		}
	}
	if view.OptTime(time.Time{}) != nil {
		t.Error("the zero time is not null")
	}
}
