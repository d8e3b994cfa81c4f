package goals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/receipt"
	"warrant/wire"
)

func TestPointer(t *testing.T) {
	// RFC 6901 §5's document and its examples.
	var doc any
	must(t, decodeJSON([]byte(`{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}`), &doc))
	for p, want := range map[string]string{"/foo": `["bar","baz"]`, "/foo/0": `"bar"`, "/": "0", "/a~1b": "1",
		"/c%d": "2", "/e^f": "3", "/g|h": "4", "/i\\j": "5", "/k\"l": "6", "/ ": "7", "/m~0n": "8"} {
		tokens, err := parsePointer(p)
		must(t, err)
		got, err := resolve(doc, tokens)
		must(t, err)
		var w any
		must(t, decodeJSON([]byte(want), &w))
		if !equalJSON(got, w) {
			t.Errorf("%s = %v, want %s", p, got, want)
		}
	}
	for _, p := range []string{"foo", "/~2", "/a~"} {
		if _, err := parsePointer(p); err == nil {
			t.Errorf("%q parsed", p)
		}
	}
	for _, p := range []string{"/foo/2", "/foo/01", "/foo/-", "/nope", "/foo/0/x"} {
		tokens, _ := parsePointer(p)
		if _, err := resolve(doc, tokens); err == nil {
			t.Errorf("%q resolved", p)
		}
	}
	var a, b, c any
	must(t, decodeJSON([]byte(`{"v":1.0,"l":[true,null]}`), &a))
	must(t, decodeJSON([]byte(`{"l":[true,null],"v":1}`), &b))
	must(t, decodeJSON([]byte(`{"l":[true,null],"v":"1"}`), &c))
	if !equalJSON(a, b) || equalJSON(a, c) {
		t.Error("JSON equality: 1.0 must equal 1, and 1 must not equal \"1\"")
	}
}

func step(id string, deps ...string) string {
	d, _ := json.Marshal(deps)
	return fmt.Sprintf(`{"id":%q,"depends_on":%s,"criteria":[{"kind":"operator","prompt":"ok?"}]}`, id, d)
}

func TestGraphRefused(t *testing.T) {
	for steps, want := range map[string]string{
		step("a") + "," + step("a"): `step id "a" is used twice`,
		step("a", "x"):              `step a depends on "x", which is not a step`,
		step("a", "a"):              "cycle: a → a",
		step("a", "c") + "," + step("b", "a") + "," + step("c", "b"):    "cycle: a → c → b → a",
		step("r") + "," + step("a", "r", "b") + "," + step("b", "a"):    "cycle: a → b → a",
		`{"id":"a","criteria":[]}`:                                      "has no criteria",
		`{"id":"a","criteria":[{"kind":"exit0"}]}`:                      `kind "exit0" is not one of`,
		`{"id":"a","criteria":[{"kind":"file","path":"../x"}]}`:         "escapes the workspace",
		`{"id":"a","criteria":[{"kind":"artefact","path":"out/x"}]}`:    "not one of the step's outputs",
		`{"id":"a","criteria":[{"kind":"receipt","path":"x"}]}`:         "only command, fingerprint and exit_code",
		`{"id":"a","criteria":[{"kind":"file","path":"x","equals":1}]}`: "json_pointer and equals go together",
	} {
		_, err := Decode(`{"title":"t","workspace":"/w","steps":[`+steps+`]}`, "")
		var we *wire.Error
		if !asWire(err, &we) || we.Code != wire.CodeArgumentsInvalid || !strings.Contains(we.Message, want) {
			t.Errorf("%s: %v; want ARGUMENTS_INVALID with %q", steps, err, want)
		}
	}
	if _, err := Decode(`{"title":"t","workspace":"/w","steps":[`+step("a")+`],"extra":1}`, ""); err == nil {
		t.Error("an unknown member was accepted")
	}
	s, err := Decode(`{"title":"t","workspace":"/w","steps":[`+step("c", "b")+","+step("a")+","+step("b", "a")+`]}`, "")
	must(t, err)
	if got := order(s.Steps); fmt.Sprint(got) != "[1 2 0]" {
		t.Errorf("order = %v, want [1 2 0]", got)
	}
}

func asWire(err error, we **wire.Error) bool {
	e, ok := err.(*wire.Error)
	*we = e
	return ok
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadBeneath reads real files back: present, missing, a symlink
// (refused, not followed), a directory, and an escape.
func TestReadBeneath(t *testing.T) {
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "f"), []byte("1.2\n"), 0o644))
	must(t, os.Symlink("f", filepath.Join(ws, "link")))
	must(t, os.Mkdir(filepath.Join(ws, "d"), 0o755))
	read, done := WorkspaceReader(ws)
	defer done()
	rb, data := read("f", true)
	sum := sha256.Sum256([]byte("1.2\n"))
	if rb.State != receipt.FilePresent || *rb.Size != 4 || string(data) != "1.2\n" || rb.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("f: %+v %q", rb, data)
	}
	for rel, want := range map[string]receipt.FileState{"nope": receipt.FileMissing, "f/x": receipt.FileMissing,
		"link": receipt.FileUnchecked, "d": receipt.FileUnchecked, "../" + filepath.Base(ws) + "/f": receipt.FileUnchecked} {
		if rb, _ := read(rel, false); rb.State != want {
			t.Errorf("%s: %+v, want %s", rel, rb, want)
		}
	}
}
