package wire

import (
	"bytes"
	"strings"
	"testing"
)

// Named tests for the structural rejection classes: what the CBOR decoder
// itself must refuse, whatever the message type.

func TestDecodeRejectsDuplicateKeys(t *testing.T) {
	mustReject(t, "body", message("query", ordered{{"handle", "a"}, {"handle", "a"}}), AgentChannel, `duplicate map key`)
	mustReject(t, "envelope", enc(ordered{{"body", map[any]any{"handle": "a"}}, {"body", map[any]any{"handle": "b"}}, {"type", "query"}}), AgentChannel, `duplicate map key`)
	req := envelopeOf(&Submit{Workspace: "/w", Request: sampleRequest()})["body"].(map[any]any)["request"].(map[any]any)
	dup := ordered{{"cwd", "."}, {"cwd", "src"}, {"argv", req["argv"]}, {"profile", "short"}, {"executable", "make"}}
	mustReject(t, "nested", message("submit", ordered{{"request", dup}, {"workspace", "/w"}}), AgentChannel, `duplicate map key`)
}

func TestDecodeRejectsIndefiniteLength(t *testing.T) {
	for name, item := range map[string]raw{
		"text":  {0x7f, 0x61, 'a', 0xff},
		"bytes": {0x5f, 0x41, 'a', 0xff},
		"array": {0x9f, 0xff},
		"map":   {0xbf, 0xff},
	} {
		mustReject(t, name, message("query", map[any]any{"handle": item}), AgentChannel, `indefinite-length .* isn't allowed`)
	}
	mustReject(t, "envelope", append(append([]byte{0xbf}, enc("body")...), append(enc(map[any]any{}), append(enc("type"), append(enc("ok"), 0xff)...)...)...), ReplyChannel, `indefinite-length`)
}

func TestDecodeRejectsTrailingBytes(t *testing.T) {
	for _, s := range samples() {
		b := mustEncode(s.msg)
		mustReject(t, s.name+"+0x00", append(bytes.Clone(b), 0), channelOf(s.msg.Type()), `extraneous data`)
		mustReject(t, s.name+"+itself", append(bytes.Clone(b), b...), channelOf(s.msg.Type()), `extraneous data`)
	}
}

// TestDecodeRejectsInvalidUTF8 puts invalid UTF-8 into every text string
// of every sample message, one at a time.
func TestDecodeRejectsInvalidUTF8(t *testing.T) {
	n := 0
	for _, s := range samples() {
		env := envelopeOf(s.msg)
		textLeaves(env, func(orig string, replace func(any)) {
			n++
			replace(badText(append([]byte(orig), 0xc0, 0x80)...)) // overlong NUL
			mustReject(t, s.name+": "+orig, enc(env), channelOf(s.msg.Type()), `invalid UTF-8`)
		})
	}
	if n < 100 {
		t.Fatalf("only %d text strings checked", n)
	}
}

func TestDecodeRejectsDepth(t *testing.T) {
	// The deepest valid message sits exactly at the cap, so the cap is as
	// tight as it can be without refusing real traffic.
	deepest := 0
	for _, s := range samples() {
		g, _ := generic(mustEncode(s.msg))
		deepest = max(deepest, depth(g))
	}
	if deepest != maxDepth {
		t.Errorf("deepest sample nests %d levels, cap is %d", deepest, maxDepth)
	}
	submit := &Submit{Workspace: "/w", Request: sampleRequest()}
	for extra := 1; extra <= 40; extra += 13 {
		b := mutate(submit, inRequest(set("argv", []any{nested(5+extra, "x")})))
		mustReject(t, "argv", b, AgentChannel, `exceeded max nested level`)
	}
}

func TestDecodeRejectsArrayCap(t *testing.T) {
	submit := &Submit{Workspace: "/w", Request: sampleRequest()}
	mustReject(t, "1025 elements", mutate(submit, inRequest(set("argv", repeat(maxArray+1, "")))), AgentChannel, `exceeded max number of elements 1024`)
	// The element count is checked before the elements exist: a header
	// claiming 2^32-1 elements and nothing after it is refused the same way.
	mustReject(t, "claimed 2^32-1 elements", mutate(submit, inRequest(set("argv", raw{0x9a, 0xff, 0xff, 0xff, 0xff}))), AgentChannel, `exceeded max number of elements`)
}

func TestDecodeRejectsMapCap(t *testing.T) {
	body := map[any]any{}
	for i := range maxMapPairs + 1 {
		body[strings.Repeat("k", i+1)] = 0
	}
	mustReject(t, "65 pairs", message("ok", body), ReplyChannel, `exceeded max number of key-value pairs 64`)
	mustReject(t, "claimed 2^32-1 pairs", message("ok", raw{0xba, 0xff, 0xff, 0xff, 0xff}), ReplyChannel, `exceeded max number of key-value pairs`)
}

func TestDecodeRejectsTags(t *testing.T) {
	mustReject(t, "tagged text", message("query", map[any]any{"handle": raw{0xd8, 0x20, 0x61, 'a'}}), AgentChannel, `tag isn't allowed`)
	mustReject(t, "self-described", append([]byte{0xd9, 0xd9, 0xf7}, mustEncode(&OK{})...), ReplyChannel, `tag isn't allowed`)
}

// TestDecodeRejectsNonCanonical covers every way to spell a valid value
// differently: unsorted keys (in every map of every sample), non-minimal
// integer and length heads, and empty optional members that are present.
func TestDecodeRejectsNonCanonical(t *testing.T) {
	for _, s := range samples() {
		env := envelopeOf(s.msg)
		mustReject(t, s.name+": envelope keys reversed", enc(reversed(env)), channelOf(s.msg.Type()), `not in canonical form`)
		eachValue(env, func(val any, replace func(any)) {
			if m, ok := val.(map[any]any); ok && len(m) > 1 {
				replace(reversed(m))
				mustReject(t, s.name+": keys reversed", enc(env), channelOf(s.msg.Type()), `not in canonical form`)
			}
		})
	}
	wait := &Wait{Handle: "a", BudgetMs: 5}
	for name, n := range map[string]raw{"1-byte": {0x18, 5}, "2-byte": {0x19, 0, 5}, "4-byte": {0x1a, 0, 0, 0, 5}} {
		mustReject(t, "budget 5 in a "+name+" head", mutate(wait, set("budget_ms", n)), AgentChannel, `not in canonical form`)
	}
	mustReject(t, "non-minimal text length", message("query", map[any]any{"handle": raw{0x78, 1, 'a'}}), AgentChannel, `not in canonical form`)
	mustReject(t, "non-minimal map length", message("ok", raw{0xb8, 0}), ReplyChannel, `not in canonical form`)
	mustReject(t, "non-minimal array length", mutate(&Submit{Workspace: "/w", Request: sampleRequest()}, inRequest(set("argv", raw{0x98, 1, 0x60}))), AgentChannel, `not in canonical form`)
	mustReject(t, "empty reason present", mutate(&Cancel{Handle: "a"}, set("reason", "")), AgentChannel, `not in canonical form`)
	mustReject(t, "snapshots false present", mutate(sampleSpawn(false), set("snapshots", false)), SpawnChannel, `not in canonical form`)
	// The CDDL allows only `? contract: true`: an explicit false is refused.
	mustReject(t, "revoke contract false present", mutate(&Revoke{LeaseID: "lease-1"}, set("contract", false)), OperatorChannel, `not in canonical form`)
	mustReject(t, "signal 0 present", mutate(&Status{Handle: "a", State: StateTerminal, Result: sampleResult()},
		func(b map[any]any) { sub(b, "result")["signal"] = 0 }), ReplyChannel, `not in canonical form`)
	mustReject(t, "body null", message("ok", nil), ReplyChannel, `envelope: `)
}

// TestCanonicalTiesTheEnvelopeToItsMessage: canonical refuses a message
// in a frame that encodes it canonically under another type's envelope
// (Decode cannot build such a pair: its message is the envelope's type).
func TestCanonicalTiesTheEnvelopeToItsMessage(t *testing.T) {
	m := &Query{Handle: "a"}
	body, err := encMode.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []MsgType{m.Type(), TypeWait} {
		env := envelope{Type: typ, Body: body}
		frame, err := encMode.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		err = canonical(frame, &env, m)
		if typ == m.Type() && err != nil {
			t.Errorf("the query's own frame: %v", err)
		}
		if typ != m.Type() && err == nil {
			t.Errorf("a query under a %s envelope was accepted", typ)
		}
	}
}

// TestDecodeRejectsWrongChannel sends every sample on every channel that
// does not carry it.
func TestDecodeRejectsWrongChannel(t *testing.T) {
	for _, s := range samples() {
		b := mustEncode(s.msg)
		for c := AgentChannel; c <= LauncherChannel; c++ {
			if c == channelOf(s.msg.Type()) {
				mustAccept(t, s.name, b, c)
				continue
			}
			mustReject(t, s.name+" on "+c.String(), b, c, `is not allowed on the `+c.String()+` channel$`)
		}
		mustReject(t, s.name+" on channel 0", b, Channel(0), `is not allowed`)
	}
}
