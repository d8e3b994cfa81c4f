package wire

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"testing"
)

// mustReject decodes data on ch and requires a refusal that wraps
// ErrMalformed, matches pattern, and returns no message.
func mustReject(t *testing.T, what string, data []byte, ch Channel, pattern string) {
	t.Helper()
	m, err := Decode(data, ch)
	switch {
	case err == nil:
		t.Errorf("%s: decoded %#v", what, m)
	case m != nil:
		t.Errorf("%s: error %v came with a message %#v", what, err, m)
	case !errors.Is(err, ErrMalformed):
		t.Errorf("%s: error %v does not wrap ErrMalformed", what, err)
	case !regexp.MustCompile(pattern).MatchString(err.Error()):
		t.Errorf("%s: error %q does not match %q", what, err, pattern)
	}
}

// mustAccept decodes data on ch and requires success.
func mustAccept(t *testing.T, what string, data []byte, ch Channel) Message {
	t.Helper()
	m, err := Decode(data, ch)
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
	return m
}

// rawEncode encodes m like Encode but without validating it, to produce
// what a hostile peer could send.
func rawEncode(t *testing.T, m Message) []byte {
	t.Helper()
	body, err := encMode.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encMode.Marshal(envelope{Type: m.Type(), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eachValue calls f for every value nested inside v (map values and
// array elements, not map keys), with a function that replaces it. The
// original is restored after f returns; f sees outer values first.
func eachValue(v any, f func(val any, replace func(any))) {
	switch x := v.(type) {
	case map[any]any:
		for k, e := range x {
			f(e, func(n any) { x[k] = n })
			x[k] = e
			eachValue(e, f)
		}
	case []any:
		for i, e := range x {
			f(e, func(n any) { x[i] = n })
			x[i] = e
			eachValue(e, f)
		}
	}
}

// textLeaves calls f for every text string nested inside v.
func textLeaves(v any, f func(orig string, replace func(any))) {
	eachValue(v, func(val any, replace func(any)) {
		if s, ok := val.(string); ok {
			f(s, replace)
		}
	})
}

// reversed returns m as an ordered map with its keys in descending
// encoded order: the opposite of canonical.
func reversed(m map[any]any) ordered {
	keys := make([][]byte, 0, len(m))
	for k := range m {
		keys = append(keys, enc(k))
	}
	slices.SortFunc(keys, func(a, b []byte) int { return bytes.Compare(b, a) })
	out := make(ordered, 0, len(m))
	for _, k := range keys {
		g, _ := generic(k)
		out = append(out, pair{g.(string), m[g]})
	}
	return out
}

// depth returns the nesting depth of arrays and maps in v.
func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[any]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}
