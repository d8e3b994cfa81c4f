package goals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// parsePointer splits an RFC 6901 JSON pointer into its reference
// tokens: "" is the whole document; otherwise it starts with "/", and
// "~1" stands for "/" and "~0" for "~" (in that order of decoding); any
// other "~" is refused.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("json_pointer %q does not start with /", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf("json_pointer %q has a ~ that is neither ~0 nor ~1", p)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// resolve returns the value the pointer names in doc (decoded by
// decodeJSON), or an error saying where it stops.
func resolve(doc any, tokens []string) (any, error) {
	v := doc
	for i, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[t]
			if !ok {
				return nil, fmt.Errorf("no member %q at token %d", t, i+1)
			}
			v = next
		case []any:
			n, err := strconv.ParseUint(t, 10, 31)
			if err != nil || (len(t) > 1 && t[0] == '0') || n >= uint64(len(x)) {
				return nil, fmt.Errorf("no array element %q at token %d", t, i+1)
			}
			v = x[n]
		default:
			return nil, fmt.Errorf("token %d (%q) goes into a scalar", i+1, t)
		}
	}
	return v, nil
}

// decodeJSON decodes exactly one JSON value, numbers kept exact.
func decodeJSON(b []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the value")
	}
	return nil
}

// equalJSON compares two decoded JSON values as JSON: same type, numbers
// by their exact value (1.0 equals 1), objects by their members.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok || x == y {
			return ok
		}
		if !modest(x) || !modest(y) {
			return false // not worth an exact comparison; different spellings
		}
		p, ok1 := new(big.Rat).SetString(x.String())
		q, ok2 := new(big.Rat).SetString(y.String())
		return ok1 && ok2 && p.Cmp(q) == 0
	}
	return a == b // string, bool, nil
}

// modest reports whether a JSON number is short and its exponent small,
// so that comparing it exactly costs little (1e999999999 would not).
func modest(n json.Number) bool {
	s := n.String()
	if len(s) > 400 {
		return false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		return err == nil && e >= -400 && e <= 400
	}
	return true
}
