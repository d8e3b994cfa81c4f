package jsonschema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func load(t *testing.T) *Set {
	t.Helper()
	s, err := Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const good = `{"schema": "test.thing/v1", "n": 3, "at": "2026-12-01T11:12:13.123456789Z", "tags": ["a", "bc"],
	"maybe": {"x": null}, "kind": "a", "other": "` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"}`

// Each keyword rejects what it forbids, and says where.
func TestValidateRejects(t *testing.T) {
	s := load(t)
	if err := s.Validate("thing.json", []byte(good)); err != nil {
		t.Fatalf("a valid document: %v", err)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"const", `"test.thing/v1"`, `"test.thing/v2"`, `/schema: "test.thing/v2" is not "test.thing/v1"`},
		{"integer", `"n": 3`, `"n": 3.5`, "/n: number is not of type integer"},
		{"type", `"n": 3`, `"n": "3"`, "/n: string is not of type integer"},
		{"date-time", `11:12:13.123456789Z`, `11:12:13.123456789+01:00`, "not an RFC 3339 UTC date-time"},
		{"date-time unparsable", `2026-12-01T11`, `2026-13-01T11`, "not an RFC 3339 UTC date-time"},
		{"pattern", `"bc"`, `"B"`, `/tags/1: "B" does not match`},
		{"oneOf", `"maybe": {"x": null}`, `"maybe": {"x": 1}`, "/maybe: object matches 0 of oneOf's 2 schemas"},
		{"nested closed", `"maybe": {"x": null}`, `"maybe": {"x": null, "y": 1}`, "/maybe"},
		{"enum", `"kind": "a"`, `"kind": "c"`, `/kind: "c" is not one of ["a","b"]`},
		{"additionalProperties", `"kind": "a"`, `"kind": "a", "extra": true`, `/: property "extra" is not allowed`},
		{"required", `"n": 3, `, ``, `/: required property "n" is missing`},
		{"cross-file $ref", `"other": "0123`, `"other": "X123`, "/other:"},
	} {
		doc := strings.Replace(good, c.from, c.to, 1)
		if doc == good {
			t.Fatalf("%s: the mutation changed nothing", c.name)
		}
		err := s.Validate("thing.json", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := s.Validate("thing.json", []byte(good+" {}")); err == nil {
		t.Error("two values validated")
	}
}

// unevaluatedProperties false admits what the schema and its $ref
// declare, and nothing else.
func TestUnevaluatedProperties(t *testing.T) {
	s := load(t)
	if err := s.Validate("other.json", []byte(`{"schema": "test.other/v1", "a": true}`)); err != nil {
		t.Fatalf("valid: %v", err)
	}
	for doc, want := range map[string]string{
		`{"schema": "test.other/v1", "a": true, "b": 1}`: `property "b" is not allowed`,
		`{"schema": "test.other/v1"}`:                    `required property "a" is missing`,
		`{"schema": "test.other/v1", "a": 1}`:            "/a: number is not of type boolean",
	} {
		if err := s.Validate("other.json", []byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
}

// A schema the package cannot fully enforce is refused at load.
func TestLoadFailsClosed(t *testing.T) {
	for name, schema := range map[string]string{
		"unknown keyword":       `{"type": "object", "minProperties": 1}`,
		"open additional":       `{"additionalProperties": true}`,
		"schema additional":     `{"additionalProperties": {"type": "string"}}`,
		"unknown format":        `{"format": "email"}`,
		"dangling ref":          `{"$ref": "#/$defs/nothing"}`,
		"ref to a missing file": `{"$ref": "nofile.json#/$defs/x"}`,
		"nested unknown":        `{"properties": {"a": {"maximum": 3}}}`,
		"bad pattern":           `{"pattern": "("}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(schema), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil {
			t.Errorf("%s: loaded %s", name, schema)
		}
	}
}
