package wire

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"warrant/wire/internal/cddltest"
)

var (
	schemaOnce sync.Once
	schemaVal  *cddltest.Schema
	schemaErr  error
)

// schema returns the parsed warrant.cddl.
func schema(t *testing.T) *cddltest.Schema {
	t.Helper()
	schemaOnce.Do(func() {
		var src []byte
		if src, schemaErr = os.ReadFile("warrant.cddl"); schemaErr == nil {
			schemaVal, schemaErr = cddltest.Parse(string(src))
		}
	})
	if schemaErr != nil {
		t.Fatalf("warrant.cddl: %v", schemaErr)
	}
	return schemaVal
}

// enumRules names the CDDL rule of every closed enum.
var enumRules = []struct {
	rule  string
	names []string
}{
	{"msg-type", msgTypeNames}, {"code", codeNames}, {"outcome", outcomeNames},
	{"profile", profileNames}, {"capability-state", capabilityNames}, {"binding", bindingNames},
	{"action-state", actionStateNames}, {"cancel-result", cancelResultNames},
	{"classification", classificationNames}, {"list-kind", listKindNames}, {"goal-state", goalStateNames},
	{"request-state", requestStateNames},
	{"output-stream", outputStreamNames},
	{"toolchain-kind", toolchainKindNames},
}

// TestCDDLEnums checks that each enum rule lists exactly the Go names, in
// order.
func TestCDDLEnums(t *testing.T) {
	s := schema(t)
	for _, e := range enumRules {
		if got := literals(s.Rules[e.rule]); !slices.Equal(got, e.names[1:]) {
			t.Errorf("rule %s = %q, Go has %q", e.rule, got, e.names[1:])
		}
	}
}

// literals returns the text literals of a choice of text literals, or nil.
func literals(t cddltest.Type) []string {
	var out []string
	for _, a := range t {
		if a.Kind != cddltest.Text {
			return nil
		}
		out = append(out, a.Text)
	}
	return out
}

// envelopes returns the message types reachable from rule through choices
// of envelope rules, with the body rule of each.
func envelopes(s *cddltest.Schema, t cddltest.Type, out map[string]string) error {
	for _, a := range t {
		switch {
		case a.Kind == cddltest.Ref && s.Rules[a.Name] != nil:
			if err := envelopes(s, s.Rules[a.Name], out); err != nil {
				return err
			}
		case a.Kind == cddltest.Map && len(a.Members) == 2 && a.Members[0].Key == "type" && a.Members[1].Key == "body":
			lit, body := a.Members[0].Type, a.Members[1].Type
			if len(lit) != 1 || lit[0].Kind != cddltest.Text || len(body) != 1 || body[0].Kind != cddltest.Ref {
				return fmt.Errorf("envelope with a non-literal type or non-rule body")
			}
			out[lit[0].Text] = body[0].Name
		default:
			return fmt.Errorf("not an envelope choice")
		}
	}
	return nil
}

// TestCDDLMatchesGoTypes walks every message body type with reflect, in
// step with its CDDL rule: same keys, same optionality, compatible types,
// all the way down. A Go field added without a CDDL member fails here.
func TestCDDLMatchesGoTypes(t *testing.T) {
	s := schema(t)
	all := map[string]string{}
	if err := envelopes(s, s.Rules["message"], all); err != nil {
		t.Fatalf("rule message: %v", err)
	}
	for c := AgentChannel; c <= LauncherChannel; c++ {
		got := map[string]string{}
		if err := envelopes(s, s.Rules[c.String()+"-message"], got); err != nil {
			t.Fatalf("rule %s-message: %v", c, err)
		}
		for mt := range messageTypes {
			if _, in := got[mt.String()]; in != c.allows(mt) {
				t.Errorf("rule %s-message: has %s = %v, Go channel allows it = %v", c, mt, in, c.allows(mt))
			}
		}
	}
	reached := map[string]bool{}
	reach(s, s.Rules["message"], reached)
	for _, e := range enumRules {
		reached[e.rule] = true
	}
	for _, name := range s.Order {
		if !reached[name] && name != "message" {
			t.Errorf("rule %s is used by no message and is not an enum", name)
		}
	}
	if len(all) != len(messageTypes) {
		t.Errorf("rule message has %d envelopes, Go has %d message types", len(all), len(messageTypes))
	}
	for mt, rt := range messageTypes {
		body, ok := all[mt.String()]
		if !ok {
			t.Errorf("message type %s has no envelope in rule message", mt)
			continue
		}
		c := &typeChecker{t: t, s: s}
		c.compare(rt, cddltest.Type{{Kind: cddltest.Ref, Name: body}}, mt.String())
	}
}

// reach marks every rule that t refers to, transitively.
func reach(s *cddltest.Schema, t cddltest.Type, seen map[string]bool) {
	for _, a := range t {
		if a.Kind == cddltest.Ref && s.Rules[a.Name] != nil && !seen[a.Name] {
			seen[a.Name] = true
			reach(s, s.Rules[a.Name], seen)
		}
		for _, m := range a.Members {
			reach(s, m.Type, seen)
		}
		for _, e := range a.Entries {
			reach(s, e.Type, seen)
		}
	}
}

type typeChecker struct {
	t *testing.T
	s *cddltest.Schema
}

func (c *typeChecker) errorf(at, format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s: %s", at, fmt.Sprintf(format, args...))
}

// resolve follows references to rules until it reaches a choice that is
// not a single plain rule reference.
func (c *typeChecker) resolve(t cddltest.Type) cddltest.Type {
	for len(t) == 1 && t[0].Kind == cddltest.Ref && !t[0].HasSize && c.s.Rules[t[0].Name] != nil {
		t = c.s.Rules[t[0].Name]
	}
	return t
}

var namer = reflect.TypeFor[interface{ names() []string }]()

func (c *typeChecker) compare(rt reflect.Type, t cddltest.Type, at string) {
	c.t.Helper()
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	t = c.resolve(t)
	if rt.Implements(namer) {
		names := reflect.Zero(rt).Interface().(interface{ names() []string }).names()
		if got := literals(t); !slices.Equal(got, names[1:]) {
			c.errorf(at, "enum %s: CDDL has %q, Go %q", rt, got, names[1:])
		}
		return
	}
	switch rt.Kind() {
	case reflect.Struct:
		c.compareStruct(rt, t, at)
	case reflect.Slice:
		if rt.Elem().Kind() == reflect.Uint8 {
			c.wantPrelude(rt, t, at, "bstr")
			return
		}
		if len(t) != 1 || t[0].Kind != cddltest.Array || len(t[0].Entries) != 1 {
			c.errorf(at, "%s: CDDL is not a homogeneous array", rt)
			return
		}
		c.compare(rt.Elem(), t[0].Entries[0].Type, at+"[]")
	case reflect.String:
		c.wantPrelude(rt, t, at, "tstr")
	case reflect.Bool:
		c.wantPrelude(rt, t, at, "bool", "true")
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.wantInt(rt, t, at, 0, math.MaxUint64>>(64-8*rt.Size()))
	case reflect.Int32, reflect.Int64:
		c.wantInt(rt, t, at, math.MinInt64>>(64-8*rt.Size()), math.MaxInt64>>(64-8*rt.Size()))
	default:
		c.errorf(at, "Go type %s has no CDDL counterpart in the checker", rt)
	}
}

func (c *typeChecker) wantPrelude(rt reflect.Type, t cddltest.Type, at string, names ...string) {
	c.t.Helper()
	if len(t) != 1 || t[0].Kind != cddltest.Ref || !slices.Contains(names, t[0].Name) {
		c.errorf(at, "Go %s wants CDDL %s", rt, strings.Join(names, " or "))
	}
}

// wantInt accepts uint/int, uint .size N with N at most the Go width, and
// ranges inside the Go type's bounds.
func (c *typeChecker) wantInt(rt reflect.Type, t cddltest.Type, at string, lo int64, hi uint64) {
	c.t.Helper()
	if len(t) != 1 {
		c.errorf(at, "Go %s wants one CDDL integer type", rt)
		return
	}
	a, width := t[0], int64(rt.Size())
	signed := lo < 0
	switch {
	case a.Kind == cddltest.Range:
		if a.Lo < lo || (a.Hi >= 0 && uint64(a.Hi) > hi) {
			c.errorf(at, "range %d..%d exceeds Go %s", a.Lo, a.Hi, rt)
		}
	case a.Kind == cddltest.Ref && a.Name == "uint" && !signed:
		if (a.HasSize && a.Hi > width) || (!a.HasSize && width != 8) {
			c.errorf(at, "uint (.size %d) does not fit Go %s", a.Hi, rt)
		}
	case a.Kind == cddltest.Ref && a.Name == "int" && signed && !a.HasSize:
		if width != 8 {
			c.errorf(at, "int does not fit Go %s", rt)
		}
	default:
		c.errorf(at, "Go %s wants a CDDL integer type", rt)
	}
}

// compareStruct compares a struct with a closed map (or, for toarray
// structs, a positional array).
func (c *typeChecker) compareStruct(rt reflect.Type, t cddltest.Type, at string) {
	c.t.Helper()
	fields := cborFields(rt)
	if f, ok := rt.FieldByName("_"); ok && strings.Contains(f.Tag.Get("cbor"), "toarray") {
		if len(t) != 1 || t[0].Kind != cddltest.Array || len(t[0].Entries) != len(fields) {
			c.errorf(at, "toarray %s wants a %d-entry CDDL array", rt, len(fields))
			return
		}
		for i, f := range fields {
			e := t[0].Entries[i]
			if e.Min != 1 || e.Max != 1 {
				c.errorf(at, "entry %d of %s must occur exactly once", i, rt)
			}
			c.compare(f.typ, e.Type, fmt.Sprintf("%s[%d]", at, i))
		}
		return
	}
	if len(t) != 1 || t[0].Kind != cddltest.Map {
		c.errorf(at, "Go struct %s wants a CDDL map", rt)
		return
	}
	members := map[string]cddltest.Member{}
	for _, m := range t[0].Members {
		members[m.Key] = m
	}
	for _, f := range fields {
		m, ok := members[f.key]
		delete(members, f.key)
		switch {
		case !ok:
			c.errorf(at, "Go field %s.%s (key %q) is not in the CDDL rule", rt, f.name, f.key)
			continue
		case m.Optional != f.omit:
			c.errorf(at+"."+f.key, "CDDL optional = %v, Go omits empty = %v", m.Optional, f.omit)
		case f.omit && f.typ.Kind() != reflect.Pointer && !f.typ.Implements(namer):
			// An omitted empty value is never sent, so the schema must
			// not accept it when present.
			if zero := zeroGeneric(f.typ); c.s.Accepts(m.Type, zero) {
				c.errorf(at+"."+f.key, "CDDL accepts the empty value %#v, which Go never sends", zero)
			}
		}
		c.compare(f.typ, m.Type, at+"."+f.key)
	}
	for k := range members {
		c.errorf(at, "CDDL member %q has no Go field in %s", k, rt)
	}
}

type cborField struct {
	name, key string
	omit      bool
	typ       reflect.Type
}

// cborFields lists the encoded fields of a struct with their cbor keys.
func cborFields(rt reflect.Type) []cborField {
	var out []cborField
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Name == "_" {
			continue
		}
		if !f.IsExported() || f.Anonymous {
			panic(fmt.Sprintf("wire: internal error: %s.%s is not a plain exported field", rt, f.Name))
		}
		key, opts, _ := strings.Cut(f.Tag.Get("cbor"), ",")
		if key == "" {
			key = f.Name
		}
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		out = append(out, cborField{name: f.Name, key: key, omit: omit, typ: f.Type})
	}
	return out
}

// zeroGeneric is the generic decoded form of the Go zero value of rt.
func zeroGeneric(rt reflect.Type) any {
	switch rt.Kind() {
	case reflect.String:
		return ""
	case reflect.Bool:
		return false
	case reflect.Slice:
		if rt.Elem().Kind() == reflect.Uint8 {
			return []byte{}
		}
		return []any{}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Int32, reflect.Int64:
		return uint64(0)
	}
	panic(fmt.Sprintf("wire: internal error: no generic zero for %s", rt))
}
