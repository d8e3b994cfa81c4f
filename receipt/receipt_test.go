package receipt

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"warrant/wire"
)

var allOutcomes = []wire.Outcome{wire.KnownNotExecuted, wire.SpawnFailed, wire.Exited, wire.Signaled,
	wire.TimedOutReaped, wire.CancelledReaped, wire.OutcomeUnknown}

func TestReceiptRoundTrip(t *testing.T) {
	for _, o := range allOutcomes {
		r := testReceipt("r1", o)
		b, err := r.Encode()
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		back, err := DecodeReceipt(b)
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		again, _ := back.Encode()
		if string(again) != string(b) {
			t.Fatalf("%s: re-encoding differs", o)
		}
		if strings.Contains(string(b), "/state/actions/a1/home") {
			t.Fatalf("%s: an environment value reached the receipt", o)
		}
	}
}

// Text that JSON cannot carry exactly (invalid UTF-8, which encoding/json
// writes as an escaped U+FFFD) is refused in every string of a receipt:
// each is planted in turn, in receipts that have every optional part.
// Valid text there, a literal U+FFFD among it, is refused only by
// Validate's own rules, or encodes to bytes that decode back to the same.
func TestReceiptRefusesTextJSONCannotCarry(t *testing.T) {
	full := testReceipt("r1", wire.Exited)
	full.Identity.Interpreter = &Interpreter{File: full.Identity.Executable, Arg: "-m", Chain: []string{"/usr/bin/env"}}
	full.Sandbox.Binding, full.Sandbox.BoundBy = wire.InPlace, "read-lease"
	full.Streams = []StreamEvidence{testCaptured(t, Stdout, "key AKIAIOSFODNN7EXAMPLE\n").Evidence, testCaptured(t, Stderr, "warn\n").Evidence}
	full.Protected = &Protected{By: ProtectedByDetect, Checked: 2, Changes: []wire.ProtectedChange{{Path: ".envrc", Before: "absent", After: "file"}}}
	full.Metadata = &Metadata{Performed: 1}
	full.Artefacts = []ReadBack{{Path: "out/app", State: FilePresent, Size: ptr(uint64(3)), SHA256: fmt.Sprintf("%064x", 1)},
		{Path: "out/log", State: FileUnchecked, Why: "not a regular file"}}
	planted, accepted := 0, 0
	for _, r := range []*Receipt{full, testReceipt("r2", wire.KnownNotExecuted)} {
		base, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		copyOf := func() *Receipt {
			c, err := DecodeReceipt(base)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		for i := 0; plantText(copyOf(), i, ""); i++ {
			planted++
			for _, bad := range []string{"x\xffy", "\xed\xa0\x80", "ab\xc3"} {
				c := copyOf()
				plantText(c, i, bad)
				if b, err := c.Encode(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not valid UTF-8") {
					t.Errorf("%s, string %d as %q: encoded in %d bytes (%v); want the UTF-8 refusal", r.ID, i, bad, len(b), err)
				}
			}
			c := copyOf()
			plantText(c, i, "é\uFFFD")
			b, err := c.Encode()
			if err != nil {
				continue // a digest, a name or a path that Validate constrains
			}
			accepted++
			if back, err := DecodeReceipt(b); err != nil {
				t.Errorf("%s, string %d: does not decode: %v", r.ID, i, err)
			} else if again, _ := back.Encode(); string(again) != string(b) {
				t.Errorf("%s, string %d: re-encoding differs", r.ID, i)
			}
		}
	}
	t.Logf("%d strings planted, %d accepted valid text", planted, accepted)
	if planted < 40 || accepted < 10 {
		t.Fatalf("%d strings planted, %d accepted valid text: the walk did not reach the receipts' text", planted, accepted)
	}
}

// plantText sets the i-th string of r (in field order) to text, unless
// text is "", and reports whether r has an i-th string.
func plantText(r *Receipt, i int, text string) bool {
	n := 0
	var walk func(v reflect.Value) bool
	walk = func(v reflect.Value) bool {
		switch v.Kind() {
		case reflect.String:
			if n++; n-1 == i {
				if text != "" {
					v.SetString(text)
				}
				return true
			}
		case reflect.Pointer:
			return !v.IsNil() && walk(v.Elem())
		case reflect.Slice:
			for k := range v.Len() {
				if walk(v.Index(k)) {
					return true
				}
			}
		case reflect.Struct:
			for k := range v.NumField() {
				if walk(v.Field(k)) {
					return true
				}
			}
		}
		return false
	}
	return walk(reflect.ValueOf(r).Elem())
}

// Every type of a receipt that marshals itself is one validText was
// written for: a closed enum, which writes a name from its table, or
// Enforcement, which writes the strings of its own fields. A new one
// must be looked at, and added here, before a receipt holds it.
func TestReceiptTypesMarshalAsWalked(t *testing.T) {
	known := map[reflect.Type]bool{
		reflect.TypeFor[EventType](): true, reflect.TypeFor[GoneMethod](): true, reflect.TypeFor[FileState](): true,
		reflect.TypeFor[StreamName](): true, reflect.TypeFor[Truncation](): true, reflect.TypeFor[Enforcement](): true,
		reflect.TypeFor[wire.Outcome](): true, reflect.TypeFor[wire.Profile](): true, reflect.TypeFor[wire.Binding](): true,
		reflect.TypeFor[wire.Code](): true, reflect.TypeFor[wire.DenialEffect](): true,
		reflect.TypeFor[wire.DenialRule](): true, reflect.TypeFor[wire.DenialSource](): true,
	}
	json, text := reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()
	seen := map[reflect.Type]bool{}
	var walk func(ty reflect.Type)
	walk = func(ty reflect.Type) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		if p := reflect.PointerTo(ty); (p.Implements(json) || p.Implements(text)) && !known[ty] {
			t.Errorf("%v marshals itself; check that validText covers what it writes", ty)
		}
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(ty.Elem())
		case reflect.Struct:
			for i := range ty.NumField() {
				walk(ty.Field(i).Type)
			}
		}
	}
	walk(reflect.TypeFor[Receipt]())
	for ty := range known {
		if !seen[ty] {
			t.Errorf("%v is in no receipt; take it off the list", ty)
		}
	}
}

// A receipt never claims more than its outcome allows.
func TestReceiptRefusesOverclaims(t *testing.T) {
	cases := map[string]func(*Receipt){
		"exit code on signaled":       func(r *Receipt) { r.ExitCode = ptr(int32(1)) },
		"exited without exit code":    func(r *Receipt) { r.Outcome, r.Signal = wire.Exited, nil },
		"no group-gone evidence":      func(r *Receipt) { r.GroupGone = nil },
		"no sandbox facts":            func(r *Receipt) { r.Sandbox = nil },
		"events out of order":         func(r *Receipt) { r.Events[0], r.Events[1] = r.Events[1], r.Events[0] },
		"unknown event type":          func(r *Receipt) { r.Events[0].Type = 99 },
		"unknown outcome value":       func(r *Receipt) { r.Outcome = 42 },
		"end before start":            func(r *Receipt) { r.End = ptr(at(1)) },
		"bad fingerprint":             func(r *Receipt) { r.Fingerprint = "xyz" },
		"UNKNOWN_TERMINATION, signal": func(r *Receipt) { r.Events = append(r.Events, Event{EventUnknownTermination, at(9)}) },
	}
	for name, edit := range cases {
		r := testReceipt("r1", wire.Signaled)
		edit(r)
		if _, err := r.Encode(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	nx := map[string]func(*Receipt){
		"pid":             func(r *Receipt) { r.Pid = ptr(int64(1)) },
		"STARTED":         func(r *Receipt) { r.Events = append(r.Events, Event{EventStarted, at(3)}) },
		"sandbox":         func(r *Receipt) { r.Sandbox = SandboxOf(testReady()) },
		"no refusal":      func(r *Receipt) { r.Error = nil },
		"exit code":       func(r *Receipt) { r.ExitCode = ptr(int32(0)) },
		"group gone":      func(r *Receipt) { r.GroupGone = &GroupGone{Method: GonePgidESRCH} },
		"observed output": func(r *Receipt) { r.Streams = []StreamEvidence{testCaptured(t, Stdout, "x").Evidence} },
	}
	for name, edit := range nx {
		r := testReceipt("r1", wire.KnownNotExecuted)
		edit(r)
		if _, err := r.Encode(); err == nil {
			t.Errorf("known_not_executed with %s: accepted", name)
		}
	}
}

// output_limit_reaped is claimed only with a stream past its budget.
func TestReceiptOutputLimit(t *testing.T) {
	r := testReceipt("r1", wire.OutputLimitReaped)
	if _, err := r.Encode(); err == nil {
		t.Fatal("output_limit_reaped without a stream past its budget: accepted")
	}
	r.Streams = []StreamEvidence{record(t, newTestRecorder(t, 4, 8), []byte("more than eight bytes"), 100).Evidence}
	if _, err := r.Encode(); err != nil {
		t.Fatalf("output_limit_reaped with a stream past its budget: %v", err)
	}
}

func TestDecodeReceiptStrict(t *testing.T) {
	b, _ := testReceipt("r1", wire.Exited).Encode()
	for name, in := range map[string]string{
		"unknown field": strings.Replace(string(b), `{"format"`, `{"extra":1,"format"`, 1),
		"whitespace":    strings.Replace(string(b), `{"format"`, `{ "format"`, 1),
		"trailing":      string(b) + "{}",
		"escaped":       strings.Replace(string(b), `"r1"`, `"\u00721"`, 1),
	} {
		if _, err := DecodeReceipt([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
