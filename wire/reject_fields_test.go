package wire

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// Named tests for the rejection classes that depend on a field's meaning.

// TestDecodeRejectsNULInEveryText puts a NUL into every text string of
// every sample message, one at a time: in place of its first rune, so
// that a text at its cap stays there, or as the whole of an empty one.
// Enum texts fail as unknown values.
func TestDecodeRejectsNULInEveryText(t *testing.T) {
	for _, s := range samples() {
		env := envelopeOf(s.msg)
		textLeaves(env, func(orig string, replace func(any)) {
			_, n := utf8.DecodeRuneInString(orig)
			replace("\x00" + orig[n:])
			mustReject(t, s.name+": "+orig, enc(env), channelOf(s.msg.Type()), `contains a NUL byte$|unknown value "`)
		})
	}
}

func TestDecodeRejectsNULInArgv(t *testing.T) {
	submit := &Submit{Workspace: "/w", Request: sampleRequest()}
	for _, arg := range []string{"\x00", "a\x00", "\x00b", "rm\x00 -rf"} {
		mustReject(t, "submit", mutate(submit, inRequest(set("argv", strs("ok", arg)))), AgentChannel, `argv\[1\]: contains a NUL byte$`)
		mustReject(t, "spawn", mutate(sampleSpawn(false), set("argv", strs("make", arg))), SpawnChannel, `argv\[1\]: contains a NUL byte$`)
		id := sampleApproval(false)
		id.Identity.Argv = []string{arg}
		mustReject(t, "identity", rawEncode(t, &ApprovalRequired{Request: id}), ReplyChannel, `argv\[0\]: contains a NUL byte$`)
	}
}

func TestDecodeRejectsNULInEnv(t *testing.T) {
	for _, kv := range [][2]string{{"PA\x00TH", "/bin"}, {"PATH", "/bin\x00/tmp"}, {"\x00", ""}} {
		r := sampleSpawn(false)
		r.Env = []EnvVar{{Name: kv[0], Value: kv[1]}}
		mustReject(t, "spawn", rawEncode(t, r), SpawnChannel, `env\[0\]\.(name|value): contains a NUL byte$`)
		if _, err := Encode(r); err == nil {
			t.Errorf("Encode accepted env %q", kv)
		}
	}
}

func TestDecodeRejectsNULInCwd(t *testing.T) {
	mustReject(t, "submit", mutate(&Submit{Workspace: "/w", Request: sampleRequest()}, inRequest(set("cwd", "src\x00"))), AgentChannel, `cwd: contains a NUL byte$`)
	r := sampleSpawn(false)
	r.Cwd.Path = "src\x00/.."
	mustReject(t, "spawn", rawEncode(t, r), SpawnChannel, `cwd: contains a NUL byte$`)
	ready := sampleReady(false)
	ready.Cwd.Path = "\x00"
	mustReject(t, "ready", rawEncode(t, ready), LauncherChannel, `cwd: contains a NUL byte$`)
}

func TestDecodeRejectsEmptyArgv(t *testing.T) {
	r := sampleSpawn(false)
	r.Argv = nil
	if _, err := Encode(r); err == nil {
		t.Error("Encode accepted a spawn request without argv[0]")
	}
	mustReject(t, "spawn", rawEncode(t, r), SpawnChannel, `argv: empty$`)
	mustReject(t, "spawn, argv absent", mutate(sampleSpawn(false), del("argv")), SpawnChannel, `argv: empty$`)
}

// TestDecodeRejectsUnknownField adds an unknown key to every map of every
// sample message, one at a time, and a near-miss spelling of a known key.
func TestDecodeRejectsUnknownField(t *testing.T) {
	n := 0
	for _, s := range samples() {
		env := envelopeOf(s.msg)
		mustReject(t, s.name+": envelope", enc(withKey(env, "version", 1)), channelOf(s.msg.Type()), `unknown field`)
		eachValue(env, func(val any, replace func(any)) {
			if m, ok := val.(map[any]any); ok {
				n++
				replace(withKey(m, "zz", 1))
				mustReject(t, s.name, enc(env), channelOf(s.msg.Type()), `unknown field`)
			}
		})
	}
	if n < len(samples()) {
		t.Fatalf("only %d maps checked", n)
	}
	// Field names match exactly: no case folding.
	mustReject(t, "Handle", message("query", map[any]any{"Handle": "a"}), AgentChannel, `unknown field`)
}

// withKey returns a copy of m with one more key.
func withKey(m map[any]any, k string, v any) map[any]any {
	out := map[any]any{k: v}
	for key, val := range m {
		out[key] = val
	}
	return out
}

func TestDecodeRejectsUnknownEnum(t *testing.T) {
	submit := &Submit{Workspace: "/w", Request: sampleRequest()}
	for _, p := range []string{"huge", "Short", "SHORT", "short ", "", "0", "invalid(0)"} {
		mustReject(t, "profile "+p, mutate(submit, inRequest(set("profile", p))), AgentChannel, `unknown value "`)
	}
	mustReject(t, "type", message("exec", map[any]any{}), AgentChannel, `unknown value "exec"`)
	mustReject(t, "code", message("refused", map[any]any{"code": "ENOENT", "detail": ""}), LauncherChannel, `unknown value "ENOENT"`)
	mustReject(t, "kind", message("list", map[any]any{"kind": "goals"}), OperatorChannel, `unknown value "goals"`)
	mustReject(t, "classification", mutate(&Resolve{Handle: "a", Classification: ClassFailed}, set("classification", "ok")), OperatorChannel, `unknown value "ok"`)
	mustReject(t, "state", mutate(&GoalSetState{Goal: "g", State: GoalActive}, set("state", "done")), OperatorChannel, `unknown value "done"`)
	mustReject(t, "cancel result", mutate(&CancelReply{Handle: "a", Result: CancelRejected}, set("result", "stopped")), ReplyChannel, `unknown value "stopped"`)
	mustReject(t, "binding", mutate(sampleReady(false), set("binding", "sealed")), LauncherChannel, `unknown value "sealed"`)
	// An enum sent as its number decodes (the codec reads integers into
	// the uint8), but its one accepted encoding is the name.
	mustReject(t, "enum as integer", mutate(submit, inRequest(set("profile", 1))), AgentChannel, `not in canonical form$`)
	mustReject(t, "enum as integer 0", mutate(submit, inRequest(set("profile", 0))), AgentChannel, `invalid value 0$`)
	mustReject(t, "type as integer", enc(map[any]any{"type": 2, "body": map[any]any{"handle": "a"}}), AgentChannel, `not in canonical form$`)
}

// TestDecodeRejectsZeroEnum removes every enum member of every sample:
// the zero value it would decode to is never valid. The optional enums
// (an action's outcome, an approval's and an identity's binding, a
// contract_enable's profile beside a request) are the exceptions, and
// are checked to decode.
func TestDecodeRejectsZeroEnum(t *testing.T) {
	for _, s := range samples() {
		rt := reflect.TypeOf(s.msg).Elem()
		env := envelopeOf(s.msg)
		body := env["body"].(map[any]any)
		for _, f := range cborFields(rt) {
			if !f.typ.Implements(namer) || body[f.key] == nil || (s.name == "approve-binding" && f.key == "binding") ||
				(s.name == "contract-enable-request-full" && f.key == "profile") || // the request's own
				((s.msg.Type() == TypeOutputChunk || s.msg.Type() == TypeFollow) && f.key == "stream") {
				continue
			}
			v := body[f.key]
			delete(body, f.key)
			mustReject(t, s.name+": no "+f.key, enc(env), channelOf(s.msg.Type()), `invalid value 0$`)
			body[f.key] = v
		}
	}
	mustAccept(t, "action without outcome", mustEncode(&Listing{Actions: []ActionView{
		{Handle: "a", Executable: "x", Fingerprint: digest(1), State: StateRunning}}}), ReplyChannel)
	mustReject(t, "output chunk: data without a stream", enc(map[any]any{"type": "output_chunk", "body": map[any]any{"handle": "a", "data": []byte("x")}}),
		ReplyChannel, `data, not_streamed or offset without a stream$`)
	mustReject(t, "output chunk: a gap ending past 2^63-1", enc(map[any]any{"type": "output_chunk", "body": map[any]any{"handle": "a", "stream": "stdout", "offset": uint64(1)<<63 - 1, "not_streamed": 1}}),
		ReplyChannel, `exceeds the cap of \d+$`)
	mustReject(t, "output chunk: an offset without a stream", enc(map[any]any{"type": "output_chunk", "body": map[any]any{"handle": "a", "offset": 1}}),
		ReplyChannel, `data, not_streamed or offset without a stream$`)
	mustAccept(t, "approve without binding", mustEncode(&Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 600}), OperatorChannel)
}

// TestDecodeRejectsMissingField removes each top-level member of every
// sample body: unless Go omits it when empty, the message must fail.
func TestDecodeRejectsMissingField(t *testing.T) {
	for _, s := range samples() {
		rt := reflect.TypeOf(s.msg).Elem()
		env := envelopeOf(s.msg)
		body := env["body"].(map[any]any)
		for _, f := range cborFields(rt) {
			if f.omit || body[f.key] == nil {
				continue
			}
			v := body[f.key]
			delete(body, f.key)
			mustReject(t, s.name+": no "+f.key, enc(env), channelOf(s.msg.Type()), `.`)
			body[f.key] = v
		}
	}
}

// TestArgvCaps checks the caps of docs/architecture.md §2.1 at their edges, on
// both Encode and Decode.
func TestArgvCaps(t *testing.T) {
	big := strings.Repeat("x", MaxArgBytes)
	cases := []struct {
		name string
		argv []string
		ok   bool
	}{
		{"256 args", make([]string, MaxArgs), true},
		{"257 args", make([]string, MaxArgs+1), false},
		{"one arg of 32 KiB", []string{big}, true},
		{"one arg of 32 KiB + 1", []string{big + "x"}, false},
		{"256 KiB in total", slicesRepeat(big, MaxArgvBytes/MaxArgBytes), true},
		{"256 KiB + 1 in total", append(slicesRepeat(big, MaxArgvBytes/MaxArgBytes), "x"), false},
	}
	for _, c := range cases {
		req := sampleRequest()
		req.Argv = c.argv
		sub := &Submit{Workspace: "/w", Request: req}
		spawn := sampleSpawn(false)
		// The launcher's argv holds argv[0] too: its count cap is one
		// higher, and its byte total counts argv[0] (empty here).
		spawn.Argv = append([]string{""}, c.argv...)
		for _, m := range []Message{sub, spawn} {
			_, encErr := Encode(m)
			if (encErr == nil) != c.ok {
				t.Errorf("%s, %s: Encode error %v", c.name, m.Type(), encErr)
			}
			if c.ok {
				mustAccept(t, c.name, rawEncode(t, m), channelOf(m.Type()))
			} else {
				mustReject(t, c.name, rawEncode(t, m), channelOf(m.Type()), `exceeds the cap of \d+$`)
			}
		}
	}
	spawn := sampleSpawn(false)
	spawn.Argv = make([]string, MaxArgs+1) // argv[0] plus 256 arguments
	mustAccept(t, "spawn 257 entries", rawEncode(t, spawn), SpawnChannel)
}

func slicesRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
