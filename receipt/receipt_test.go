package receipt

import (
	"errors"
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
// writes as an escaped U+FFFD) is refused wherever it sits; valid text,
// a literal U+FFFD among it, encodes and decodes back to the same bytes.
func TestReceiptRefusesTextJSONCannotCarry(t *testing.T) {
	places := map[string]func(r *Receipt, text string){
		"receipt id":       func(r *Receipt, s string) { r.ID = s },
		"an argv element":  func(r *Receipt, s string) { r.Identity.Argv = append(r.Identity.Argv, s) },
		"the cwd's path":   func(r *Receipt, s string) { r.Identity.Cwd.Path += s },
		"an env name":      func(r *Receipt, s string) { r.Identity.EnvNames = append(r.Identity.EnvNames, s) },
		"an artefact path": func(r *Receipt, s string) { r.Artefacts = []ReadBack{{Path: s, State: FileMissing}} },
		"a protected change": func(r *Receipt, s string) {
			r.Protected = &Protected{By: ProtectedByDetect, Checked: 1, Changes: []wire.ProtectedChange{{Path: ".envrc", Before: "absent", After: s}}}
		},
	}
	for name, put := range places {
		bad := testReceipt("r1", wire.Exited)
		put(bad, "x\xffy")
		if b, err := bad.Encode(); !errors.Is(err, ErrInvalid) || b != nil {
			t.Errorf("%s: invalid UTF-8 encoded in %d bytes (%v); want ErrInvalid", name, len(b), err)
		}
		good := testReceipt("r1", wire.Exited)
		put(good, "é\uFFFD")
		b, err := good.Encode()
		if err != nil {
			t.Fatalf("%s: valid text refused: %v", name, err)
		}
		if back, err := DecodeReceipt(b); err != nil {
			t.Errorf("%s: does not decode: %v", name, err)
		} else if again, _ := back.Encode(); string(again) != string(b) {
			t.Errorf("%s: re-encoding differs", name)
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
