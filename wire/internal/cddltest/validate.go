package cddltest

import (
	"fmt"
	"strings"
)

// Validate reports whether v, a generic decoded CBOR value, matches the
// rule named rule. The error names the path to the first mismatch.
func (s *Schema) Validate(rule string, v any) error {
	t, ok := s.Rules[rule]
	if !ok {
		return fmt.Errorf("validate: no rule %s", rule)
	}
	return s.match(t, v, rule)
}

// Accepts reports whether v matches t.
func (s *Schema) Accepts(t Type, v any) bool { return s.match(t, v, "value") == nil }

func (s *Schema) match(t Type, v any, at string) error {
	var errs []string
	for _, a := range t {
		err := s.matchAlt(a, v, at)
		if err == nil {
			return nil
		}
		errs = append(errs, err.Error())
	}
	if len(errs) == 1 {
		return fmt.Errorf("%s", errs[0])
	}
	return fmt.Errorf("%s: no alternative matches (%s)", at, strings.Join(errs, " | "))
}

func (s *Schema) matchAlt(a *Alt, v any, at string) error {
	switch a.Kind {
	case Ref:
		return s.matchRef(a, v, at)
	case Text:
		if str, ok := v.(string); !ok || str != a.Text {
			return fmt.Errorf("%s: %s is not %q", at, describe(v), a.Text)
		}
		return nil
	case Range:
		n, ok := integer(v)
		if !ok || n < a.Lo || n > a.Hi {
			return fmt.Errorf("%s: %s is not in %d..%d", at, describe(v), a.Lo, a.Hi)
		}
		return nil
	case Map:
		return s.matchMap(a, v, at)
	case Array:
		return s.matchArray(a, v, at)
	}
	panic(fmt.Sprintf("cddltest: internal error: kind %d", a.Kind))
}

func (s *Schema) matchRef(a *Alt, v any, at string) error {
	if t, ok := s.Rules[a.Name]; ok {
		if a.HasSize {
			return fmt.Errorf("%s: .size on rule %s is outside the subset", at, a.Name)
		}
		return s.match(t, v, at)
	}
	var size int64
	ok := false
	switch a.Name {
	case "tstr":
		var str string
		str, ok = v.(string)
		size = int64(len(str))
	case "bstr":
		var b []byte
		b, ok = v.([]byte)
		size = int64(len(b))
	case "uint":
		var u uint64
		if u, ok = v.(uint64); ok && a.HasSize {
			// uint .size N: the value fits in N bytes.
			if a.Lo != a.Hi {
				return fmt.Errorf("%s: uint .size takes one byte count", at)
			}
			for ; u != 0; u >>= 8 {
				size++
			}
			size = max(size, a.Lo)
		}
	case "int":
		_, ok = v.(uint64)
		if !ok {
			_, ok = v.(int64)
		}
	case "bool":
		_, ok = v.(bool)
	case "true", "false":
		b, isBool := v.(bool)
		ok = isBool && b == (a.Name == "true")
	}
	switch {
	case !ok:
		return fmt.Errorf("%s: %s is not %s", at, describe(v), a.Name)
	case a.HasSize && (size < a.Lo || size > a.Hi):
		return fmt.Errorf("%s: %s of size %d is outside .size %d..%d", at, a.Name, size, a.Lo, a.Hi)
	}
	return nil
}

func (s *Schema) matchMap(a *Alt, v any, at string) error {
	m, ok := v.(map[any]any)
	if !ok {
		return fmt.Errorf("%s: %s is not a map", at, describe(v))
	}
	known := map[string]bool{}
	for _, mem := range a.Members {
		known[mem.Key] = true
		val, present := m[mem.Key]
		switch {
		case !present && !mem.Optional:
			return fmt.Errorf("%s: missing member %q", at, mem.Key)
		case present:
			if err := s.match(mem.Type, val, at+"."+mem.Key); err != nil {
				return err
			}
		}
	}
	for k := range m {
		key, isText := k.(string)
		if !isText || !known[key] {
			return fmt.Errorf("%s: unexpected key %s", at, describe(k))
		}
	}
	return nil
}

func (s *Schema) matchArray(a *Alt, v any, at string) error {
	items, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: %s is not an array", at, describe(v))
	}
	i := 0
	for _, e := range a.Entries {
		n := 0
		for n < e.Max && i < len(items) && s.Accepts(e.Type, items[i]) {
			n++
			i++
		}
		if n < e.Min {
			if i < len(items) {
				return s.match(e.Type, items[i], fmt.Sprintf("%s[%d]", at, i))
			}
			return fmt.Errorf("%s: %d entries, want at least %d", at, n, e.Min)
		}
	}
	if i != len(items) {
		return fmt.Errorf("%s: %d entries, only %d match", at, len(items), i)
	}
	return nil
}

// integer returns v as an int64 if it is a CBOR integer in range.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case uint64:
		if n > 1<<63-1 {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("text(%d bytes)", len(x))
		}
		return fmt.Sprintf("%q", x)
	case []byte:
		return fmt.Sprintf("bytes(%d)", len(x))
	case []any:
		return fmt.Sprintf("array(%d)", len(x))
	case map[any]any:
		return fmt.Sprintf("map(%d)", len(x))
	}
	return fmt.Sprintf("%T(%v)", v, v)
}
