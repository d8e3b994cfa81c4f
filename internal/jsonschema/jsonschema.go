package jsonschema

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Set is the schemas of one directory, by file name.
type Set struct {
	files map[string]map[string]any
}

// keywords are those this package implements or treats as annotations.
var keywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "title": true, "description": true, "examples": true,
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"unevaluatedProperties": true, "items": true, "enum": true, "const": true, "pattern": true,
	"format": true, "oneOf": true, "allOf": true, "$ref": true,
}

// Load reads every *.json file of dir as a schema and checks that each
// uses only the implemented keywords and that every $ref resolves.
func Load(dir string) (*Set, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("load schemas: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("load schemas: no *.json in %s", dir)
	}
	s := &Set{files: map[string]map[string]any{}}
	for _, n := range names {
		raw, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("load schemas: %w", err)
		}
		var v map[string]any
		if err := decode(raw, &v); err != nil {
			return nil, fmt.Errorf("load schema %s: %w", filepath.Base(n), err)
		}
		s.files[filepath.Base(n)] = v
	}
	for name, v := range s.files {
		if err := s.check(name, v, "#"); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
	}
	return s, nil
}

// Files lists the schema files of the set.
func (s *Set) Files() []string {
	names := make([]string, 0, len(s.files))
	for n := range s.files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// check walks one schema: known keywords only, closure keywords false
// only, every $ref resolvable, every pattern compilable.
func (s *Set) check(file string, sch map[string]any, at string) error {
	for k, v := range sch {
		if !keywords[k] {
			return fmt.Errorf("%s: keyword %q is not implemented", at, k)
		}
		switch k {
		case "additionalProperties", "unevaluatedProperties":
			if b, ok := v.(bool); !ok || b {
				return fmt.Errorf("%s: %s must be false", at, k)
			}
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s: pattern is not a string", at)
			}
			if _, err := regexp.Compile(p); err != nil {
				return fmt.Errorf("%s: pattern: %w", at, err)
			}
		case "format":
			if v != "date-time" {
				return fmt.Errorf("%s: format %v is not implemented", at, v)
			}
		case "$ref":
			ref, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s: $ref is not a string", at)
			}
			if _, _, err := s.resolve(file, ref); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		case "properties", "$defs":
			m, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: %s is not an object", at, k)
			}
			for name, sub := range m {
				if err := s.checkSub(file, sub, at+"/"+k+"/"+name); err != nil {
					return err
				}
			}
		case "items":
			if err := s.checkSub(file, v, at+"/items"); err != nil {
				return err
			}
		case "oneOf", "allOf":
			l, ok := v.([]any)
			if !ok || len(l) == 0 {
				return fmt.Errorf("%s: %s is not a non-empty array", at, k)
			}
			for i, sub := range l {
				if err := s.checkSub(file, sub, fmt.Sprintf("%s/%s/%d", at, k, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (s *Set) checkSub(file string, v any, at string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: not a schema object", at)
	}
	return s.check(file, m, at)
}

// resolve finds the schema ref names from file: "#/$defs/NAME",
// "FILE#/$defs/NAME" or "FILE".
func (s *Set) resolve(file, ref string) (string, map[string]any, error) {
	target, frag, _ := strings.Cut(ref, "#")
	if target == "" {
		target = file
	}
	root, ok := s.files[target]
	if !ok {
		return "", nil, fmt.Errorf("$ref %q: no schema file %s", ref, target)
	}
	if frag == "" {
		return target, root, nil
	}
	name, ok := strings.CutPrefix(frag, "/$defs/")
	if !ok || strings.Contains(name, "/") {
		return "", nil, fmt.Errorf("$ref %q: only #/$defs/NAME is implemented", ref)
	}
	defs, _ := root["$defs"].(map[string]any)
	sub, ok := defs[name].(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("$ref %q: no $defs/%s in %s", ref, name, target)
	}
	return target, sub, nil
}

// Validate checks doc, one JSON value, against the top-level schema of
// file and returns every violation, each at its JSON pointer.
func (s *Set) Validate(file string, doc []byte) error {
	sch, ok := s.files[file]
	if !ok {
		return fmt.Errorf("no schema file %s", file)
	}
	var v any
	if err := decode(doc, &v); err != nil {
		return fmt.Errorf("not one JSON value: %w", err)
	}
	var errs []string
	s.validate(file, sch, v, "", &errs)
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", file, strings.Join(errs, "; "))
	}
	return nil
}

func decode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the value")
	}
	return nil
}

func (s *Set) validate(file string, sch map[string]any, v any, at string, errs *[]string) {
	fail := func(format string, a ...any) {
		*errs = append(*errs, fmt.Sprintf("%s: %s", cmp.Or(at, "/"), fmt.Sprintf(format, a...)))
	}
	if ref, ok := sch["$ref"].(string); ok {
		f, sub, err := s.resolve(file, ref)
		if err != nil {
			fail("%v", err)
			return
		}
		s.validate(f, sub, v, at, errs)
	}
	if t, ok := sch["type"]; ok && !hasType(t, v) {
		fail("%s is not of type %v", kind(v), t)
		return
	}
	if c, ok := sch["const"]; ok && !equal(c, v) {
		fail("%s is not %s", show(v), show(c))
	}
	if e, ok := sch["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		fail("%s is not one of %s", show(v), show(e))
	}
	if str, ok := v.(string); ok {
		if p, ok := sch["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			fail("%q does not match %s", str, p)
		}
		if sch["format"] == "date-time" {
			if t, err := time.Parse(time.RFC3339Nano, str); err != nil || !strings.HasSuffix(str, "Z") || t.Location() != time.UTC {
				fail("%q is not an RFC 3339 UTC date-time", str)
			}
		}
	}
	if l, ok := sch["allOf"].([]any); ok {
		for _, sub := range l {
			s.validate(file, sub.(map[string]any), v, at, errs)
		}
	}
	if l, ok := sch["oneOf"].([]any); ok {
		n := 0
		for _, sub := range l {
			var e []string
			s.validate(file, sub.(map[string]any), v, at, &e)
			if len(e) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("%s matches %d of oneOf's %d schemas, not exactly one", kind(v), n, len(l))
		}
	}
	if obj, ok := v.(map[string]any); ok {
		s.validateObject(file, sch, obj, at, errs)
	}
	if arr, ok := v.([]any); ok {
		if items, ok := sch["items"].(map[string]any); ok {
			for i, x := range arr {
				s.validate(file, items, x, fmt.Sprintf("%s/%d", at, i), errs)
			}
		}
	}
}

func (s *Set) validateObject(file string, sch map[string]any, obj map[string]any, at string, errs *[]string) {
	props, _ := sch["properties"].(map[string]any)
	for _, r := range asList(sch["required"]) {
		if _, ok := obj[r.(string)]; !ok {
			*errs = append(*errs, fmt.Sprintf("%s: required property %q is missing", cmp.Or(at, "/"), r))
		}
	}
	for name, x := range obj {
		if sub, ok := props[name].(map[string]any); ok {
			s.validate(file, sub, x, at+"/"+name, errs)
		}
	}
	allowed := map[string]bool{}
	closed := false
	if _, ok := sch["additionalProperties"]; ok {
		closed = true
		for name := range props {
			allowed[name] = true
		}
	}
	if _, ok := sch["unevaluatedProperties"]; ok {
		closed = true
		s.declared(file, sch, allowed, 0)
	}
	if !closed {
		return
	}
	for name := range obj {
		if !allowed[name] {
			*errs = append(*errs, fmt.Sprintf("%s: property %q is not allowed", cmp.Or(at, "/"), name))
		}
	}
}

// declared adds the properties sch declares, with those of the schemas
// its allOf and $ref reach, to names.
func (s *Set) declared(file string, sch map[string]any, names map[string]bool, depth int) {
	if depth > 32 {
		return
	}
	props, _ := sch["properties"].(map[string]any)
	for n := range props {
		names[n] = true
	}
	if ref, ok := sch["$ref"].(string); ok {
		if f, sub, err := s.resolve(file, ref); err == nil {
			s.declared(f, sub, names, depth+1)
		}
	}
	for _, sub := range asList(sch["allOf"]) {
		s.declared(file, sub.(map[string]any), names, depth+1)
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func hasType(t, v any) bool {
	if l, ok := t.([]any); ok {
		return slices.ContainsFunc(l, func(x any) bool { return hasType(x, v) })
	}
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(n.String(), ".eE")
	}
	return false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
