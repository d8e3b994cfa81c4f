package wire

import (
	"encoding"
	"strings"
	"testing"
)

// checkEnumType exercises one enum type through ParseEnum, String,
// MarshalText, UnmarshalText and checkEnum.
func checkEnumType[E interface {
	namedEnum
	String() string
	MarshalText() ([]byte, error)
}, P interface {
	*E
	encoding.TextUnmarshaler
}](t *testing.T, names []string) {
	t.Helper()
	var zero E
	if len(zero.names()) != len(names) || names[0] != "" {
		t.Fatalf("%T: names table %q", zero, names)
	}
	seen := map[string]bool{}
	for i := 1; i < len(names); i++ {
		e := E(i)
		if seen[names[i]] || names[i] == "" {
			t.Errorf("%T: name %q empty or repeated", e, names[i])
		}
		seen[names[i]] = true
		text, err := e.MarshalText()
		if err != nil || string(text) != names[i] || e.String() != names[i] {
			t.Errorf("%T(%d): MarshalText %q, %v; String %q; want %q", e, i, text, err, e.String(), names[i])
		}
		var back E
		if err := P(&back).UnmarshalText(text); err != nil || back != e {
			t.Errorf("%T(%d): UnmarshalText(%q) = %d, %v", e, i, text, back, err)
		}
		if parsed, err := ParseEnum[E](names[i]); err != nil || parsed != e {
			t.Errorf("%T(%d): ParseEnum(%q) = %d, %v", e, i, names[i], parsed, err)
		}
	}
	for _, bad := range []E{0, E(len(names)), 255} {
		if text, err := bad.MarshalText(); err == nil {
			t.Errorf("%T(%d): MarshalText = %q, want an error", bad, uint8(bad), text)
		}
		if !strings.HasPrefix(bad.String(), "invalid(") {
			t.Errorf("%T(%d): String = %q", bad, uint8(bad), bad.String())
		}
		if checkEnum(bad) == nil {
			t.Errorf("%T(%d): checkEnum accepted it", bad, uint8(bad))
		}
	}
	for _, text := range []string{"", "invalid(0)", "0", "1", strings.ToUpper(names[1]) + "x", names[1] + " ", " " + names[1]} {
		if e, err := ParseEnum[E](text); err == nil {
			t.Errorf("%T: ParseEnum(%q) = %d", e, text, e)
		}
		var e E
		if err := P(&e).UnmarshalText([]byte(text)); err == nil || e != 0 {
			t.Errorf("%T: UnmarshalText(%q) = %d, %v", e, text, e, err)
		}
	}
}

func TestEnums(t *testing.T) {
	checkEnumType[MsgType](t, msgTypeNames)
	checkEnumType[Code](t, codeNames)
	checkEnumType[Outcome](t, outcomeNames)
	checkEnumType[Profile](t, profileNames)
	checkEnumType[CapabilityState](t, capabilityNames)
	checkEnumType[Binding](t, bindingNames)
	checkEnumType[ActionState](t, actionStateNames)
	checkEnumType[CancelResult](t, cancelResultNames)
	checkEnumType[Classification](t, classificationNames)
	checkEnumType[ListKind](t, listKindNames)
	checkEnumType[GoalState](t, goalStateNames)
	checkEnumType[RequestState](t, requestStateNames)
	checkEnumType[OutputStream](t, outputStreamNames)
	checkEnumType[ToolchainKind](t, toolchainKindNames)
	if len(enumRules) != 14 {
		t.Errorf("TestEnums covers 14 enums, enumRules lists %d", len(enumRules))
	}
}

// TestEncodeRefusesInvalidEnums checks that zero and out-of-range enum
// values never reach the wire.
func TestEncodeRefusesInvalidEnums(t *testing.T) {
	for _, p := range []Profile{0, ProfileLong + 1, 255} {
		req := sampleRequest()
		req.Profile = p
		if b, err := Encode(&Submit{Workspace: "/w", Request: req}); err == nil {
			t.Errorf("profile %d: encoded %x", p, b)
		}
	}
	for _, m := range []Message{
		&Refused{Code: 0}, &Refused{Code: Code(len(codeNames))},
		&List{}, &List{Kind: ListContractGrants + 1},
		&Resolve{Handle: "a"}, &GoalSetState{Goal: "g", State: 9},
		&Status{Handle: "a"}, &Status{Handle: "a", State: StateRunning, Result: &Result{}},
		&CancelReply{Handle: "a"}, &GoalReply{Goal: "g"},
		&Listing{Actions: []ActionView{{Handle: "a", Executable: "x", Fingerprint: digest(1), State: StateUnknown, Outcome: OutcomeUnknown + 1}}},
		&Ready{SeccompDigest: digest(1), ExecutedSHA256: digest(1), Workspace: DirIdentity{Path: "/w"}, Cwd: DirIdentity{Path: "."}},
	} {
		if b, err := Encode(m); err == nil {
			t.Errorf("%T: encoded %x", m, b)
		}
	}
	// The envelope's own type is checked too: an unknown body type cannot
	// be built outside the package, and a corrupt MsgType never encodes.
	if b, err := Canonical(envelope{Type: 0}); err == nil {
		t.Errorf("envelope of type 0 encoded: %x", b)
	}
}
