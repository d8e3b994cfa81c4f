package cddltest

import (
	"strings"
	"testing"
)

const testSchema = `
; a comment
msg = { type: "a", body: body } / { type: "b", body: {} }
body = {
  name: tstr .size (1..3),   ; trailing comma allowed
  ? flag: true,
  "quoted key": -5..5,
  list: [1*2 uint .size 1],
  pair: [k: tstr, v: bstr .size 2],
  any: int / bool,
}
`

func TestValidate(t *testing.T) {
	s, err := Parse(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	good := func() map[any]any {
		return map[any]any{"name": "abc", "quoted key": int64(-5), "list": []any{uint64(255)},
			"pair": []any{"k", []byte{1, 2}}, "any": true}
	}
	if err := s.Validate("msg", map[any]any{"type": "a", "body": good()}); err != nil {
		t.Fatalf("valid value refused: %v", err)
	}
	if err := s.Validate("msg", map[any]any{"type": "b", "body": map[any]any{}}); err != nil {
		t.Fatalf("valid value refused: %v", err)
	}
	bad := map[string]func(m map[any]any){
		"missing member":   func(m map[any]any) { delete(m, "name") },
		"unknown key":      func(m map[any]any) { m["extra"] = uint64(1) },
		"non-text key":     func(m map[any]any) { m[uint64(1)] = uint64(1) },
		"text too long":    func(m map[any]any) { m["name"] = "abcd" },
		"text too short":   func(m map[any]any) { m["name"] = "" },
		"wrong type":       func(m map[any]any) { m["name"] = []byte("abc") },
		"false for true":   func(m map[any]any) { m["flag"] = false },
		"below range":      func(m map[any]any) { m["quoted key"] = int64(-6) },
		"above range":      func(m map[any]any) { m["quoted key"] = uint64(6) },
		"too few entries":  func(m map[any]any) { m["list"] = []any{} },
		"too many entries": func(m map[any]any) { m["list"] = []any{uint64(1), uint64(2), uint64(3)} },
		"uint too wide":    func(m map[any]any) { m["list"] = []any{uint64(256)} },
		"negative uint":    func(m map[any]any) { m["list"] = []any{int64(-1)} },
		"short pair":       func(m map[any]any) { m["pair"] = []any{"k"} },
		"bstr size":        func(m map[any]any) { m["pair"] = []any{"k", []byte{1}} },
		"no alternative":   func(m map[any]any) { m["any"] = "x" },
	}
	for name, mutate := range bad {
		m := good()
		mutate(m)
		if err := s.Validate("msg", map[any]any{"type": "a", "body": m}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := s.Validate("msg", map[any]any{"type": "c", "body": map[any]any{}}); err == nil {
		t.Error("unknown literal accepted")
	}
}

func TestParseRejectsOutsideSubset(t *testing.T) {
	for _, src := range []string{
		"a = b",                    // undefined name
		"a = { x: tstr, x: tstr }", // duplicate key
		"a = tstr a = tstr",        // duplicate rule
		"a = { * tstr => any }",    // computed keys
		"a = tstr .regexp \"x\"",   // other controls
		"a = 5..1",                 // empty range
		"= tstr",                   // no name
	} {
		if _, err := Parse(src); err == nil {
			t.Errorf("%q: parsed", src)
		} else if strings.Contains(err.Error(), "internal error") {
			t.Errorf("%q: %v", src, err)
		}
	}
}
