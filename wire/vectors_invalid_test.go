package wire

import (
	"bytes"
	"fmt"
	"strings"
)

// spec is one vector as defined in Go, before it is written to disk.
type spec struct {
	name    string
	channel Channel
	framed  bool
	data    []byte
	expect  string
	note    string
}

// Shorthands for editing generic bodies.
func sub(m map[any]any, key string) map[any]any { return m[key].(map[any]any) }

func set(key string, v any) func(map[any]any) { return func(b map[any]any) { b[key] = v } }

func del(key string) func(map[any]any) { return func(b map[any]any) { delete(b, key) } }

// inRequest edits the request of a submit body.
func inRequest(f func(map[any]any)) func(map[any]any) {
	return func(b map[any]any) { f(sub(b, "request")) }
}

// badText is a text string holding bytes that are not UTF-8.
func badText(b ...byte) raw { return raw(append(head(3, uint64(len(b))), b...)) }

// nested wraps v in n arrays.
func nested(n int, v any) any {
	for range n {
		v = []any{v}
	}
	return v
}

func repeat(n int, v any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// invalidSpecs returns the invalid vectors: at least one for every
// rejection class.
func invalidSpecs() []spec {
	submit := &Submit{Workspace: "/home/u/project", Request: sampleRequest()}
	query := &Query{Handle: "act-1"}
	wait := &Wait{Handle: "act-1", BudgetMs: 30000}
	spawn := sampleSpawn(false)
	A, O, R, S, L := AgentChannel, OperatorChannel, ReplyChannel, SpawnChannel, LauncherChannel
	v := func(name string, ch Channel, data []byte, expect, note string) spec {
		return spec{name: name, channel: ch, data: data, expect: expect, note: note}
	}
	fr := func(name string, ch Channel, data []byte, expect, note string) spec {
		return spec{name: name, channel: ch, framed: true, data: data, expect: expect, note: note}
	}
	okBody := func(b any) []byte { return message("ok", b) }
	queryB := mustEncode(query)
	var sixtyFive = map[any]any{}
	for i := range 65 {
		sixtyFive[strings.Repeat("k", i+1)] = 0
	}
	return []spec{
		v("envelope-empty-input", A, nil, "malformed-envelope", "zero bytes"),
		v("envelope-not-map", A, enc([]any{"query", map[any]any{"handle": "act-1"}}), "malformed-envelope", "the envelope is an array"),
		v("envelope-null", R, enc(nil), "malformed-envelope", "the envelope is null"),
		v("envelope-missing-body", A, enc(ordered{{"type", "query"}}), "malformed-envelope", "no body"),
		v("envelope-missing-type", A, enc(ordered{{"body", map[any]any{"handle": "act-1"}}}), "malformed-envelope", "no type"),
		v("envelope-body-null", R, okBody(nil), "malformed-envelope", "the body is null"),
		v("envelope-body-array", A, message("query", strs("act-1")), "malformed-envelope", "the body is an array"),

		v("envelope-unknown-field", A, enc(map[any]any{"type": "query", "body": map[any]any{"handle": "a"}, "version": 1}), "unknown-field", "a third envelope key"),
		v("submit-unknown-field", A, mutate(submit, set("shell", true)), "unknown-field", "a body key the schema does not have"),
		v("submit-request-unknown-field", A, mutate(submit, inRequest(set("env", strs("LD_PRELOAD=/x.so")))), "unknown-field", "an unknown key inside the request"),
		v("spawn-unknown-field", S, mutate(spawn, set("uid", 0)), "unknown-field", "an unknown key in a spawn request"),
		v("ok-unknown-field", R, okBody(map[any]any{"x": 1}), "unknown-field", "ok has no fields"),

		v("submit-missing-request", A, mutate(submit, del("request")), "missing-field", "request absent: profile decodes to zero"),
		v("query-missing-handle", A, mutate(query, del("handle")), "missing-field", "handle absent"),
		v("wait-missing-budget", A, mutate(wait, del("budget_ms")), "missing-field", "a required member absent; the value re-encodes with it"),
		v("spawn-missing-profile", S, mutate(spawn, del("profile")), "missing-field", "an enum absent decodes to zero, which is never valid"),
		v("spawn-missing-protocol", S, mutate(spawn, del("protocol")), "missing-field", "a broker from before proceed: the launcher refuses it before it does anything"),
		v("spawn-protocol-1", S, mutate(spawn, set("protocol", 1)), "invalid-value", "a spawn protocol other than this launcher's"),
		v("refused-missing-code", L, enc(map[any]any{"type": "refused", "body": map[any]any{"detail": "x"}}), "missing-field", "code absent"),

		v("query-duplicate-key", A, message("query", ordered{{"handle", "a"}, {"handle", "b"}}), "duplicate-key", "handle twice"),
		v("envelope-duplicate-type", A, enc(ordered{{"body", map[any]any{"handle": "a"}}, {"type", "query"}, {"type", "query"}}), "duplicate-key", "type twice"),
		v("refused-duplicate-key", L, message("refused", ordered{{"code", "BUSY"}, {"code", "INTERNAL"}, {"detail", ""}}), "duplicate-key", "code twice"),

		v("query-indefinite-text", A, message("query", map[any]any{"handle": raw{0x7f, 0x61, 'a', 0x61, 'b', 0xff}}), "indefinite-length", "handle as an indefinite-length text string"),
		v("submit-indefinite-argv", A, mutate(submit, inRequest(set("argv", raw{0x9f, 0x61, 'x', 0xff}))), "indefinite-length", "argv as an indefinite-length array"),
		v("ok-indefinite-body", R, okBody(raw{0xbf, 0xff}), "indefinite-length", "the body as an indefinite-length map"),
		v("exec-failed-indefinite-bytes", L, message("exec_failed", map[any]any{"errno": raw{0x5f, 0xff}}), "indefinite-length", "an indefinite-length byte string"),

		v("query-trailing-byte", A, append(bytes.Clone(queryB), 0), "trailing-bytes", "one byte after the item"),
		v("ok-trailing-item", R, append(mustEncode(&OK{}), mustEncode(&OK{})...), "trailing-bytes", "two items"),

		v("submit-argv-invalid-utf8", A, mutate(submit, inRequest(set("argv", []any{badText(0xc3, 0x28)}))), "invalid-utf8", "argv[0] is not UTF-8"),
		v("query-handle-invalid-utf8", A, message("query", map[any]any{"handle": badText(0xff)}), "invalid-utf8", "handle is not UTF-8"),
		v("spawn-env-invalid-utf8", S, mutate(spawn, set("env", []any{[]any{"LANG", badText('C', 0xed, 0xa0, 0x80)}})), "invalid-utf8", "an env value holds a surrogate"),

		v("submit-argv-nul", A, mutate(submit, inRequest(set("argv", strs("a\x00b")))), "nul-byte", "NUL inside argv"),
		v("submit-cwd-nul", A, mutate(submit, inRequest(set("cwd", "src\x00/../.."))), "nul-byte", "NUL inside cwd"),
		v("submit-executable-nul", A, mutate(submit, inRequest(set("executable", "make\x00x"))), "nul-byte", "NUL inside executable"),
		v("spawn-argv-nul", S, mutate(spawn, set("argv", strs("make", "\x00"))), "nul-byte", "NUL inside argv"),
		v("spawn-env-name-nul", S, mutate(spawn, set("env", []any{strs("PA\x00TH", "/usr/bin")})), "nul-byte", "NUL inside an env name"),
		v("spawn-env-value-nul", S, mutate(spawn, set("env", []any{strs("PATH", "/usr/bin\x00:/tmp")})), "nul-byte", "NUL inside an env value"),
		v("spawn-cwd-nul", S, mutate(spawn, func(b map[any]any) { sub(b, "cwd")["path"] = "src\x00" }), "nul-byte", "NUL inside the cwd path"),
		v("spawn-home-nul", S, mutate(spawn, set("home", "/run/w\x00")), "nul-byte", "NUL inside home"),
		v("error-message-nul", R, message("error", map[any]any{"code": "BUSY", "message": "a\x00"}), "nul-byte", "NUL inside a human sentence"),

		v("submit-argv-too-deep", A, mutate(submit, inRequest(set("argv", []any{nested(6, "x")}))), "too-deep", "arrays nested past depth 8"),
		v("query-handle-too-deep", A, message("query", map[any]any{"handle": nested(40, "x")}), "too-deep", "40 nested arrays"),

		v("submit-argv-1025-elements", A, mutate(submit, inRequest(set("argv", repeat(1025, "")))), "too-many-elements", "an array beyond the 1024-element cap"),
		v("ok-65-pairs", R, okBody(sixtyFive), "too-many-elements", "a map beyond the 64-pair cap"),

		v("submit-argv-257", A, mutate(submit, inRequest(set("argv", repeat(257, "x")))), "cap-exceeded", "257 arguments; the cap is 256"),
		v("submit-arg-32769-bytes", A, mutate(submit, inRequest(set("argv", strs(strings.Repeat("x", MaxArgBytes+1))))), "cap-exceeded", "one argument over 32 KiB"),
		v("spawn-argv-258", S, mutate(spawn, set("argv", repeat(258, "x"))), "cap-exceeded", "258 entries with argv[0]; the cap is 257"),
		v("contract-offers-cover-1025-bytes", R, mutate(&ContractOffers{Offers: []ContractOfferItem{{Name: "git", Usage: "git status", Covers: []string{"git status"}, Program: sampleProgram()}}},
			func(b map[any]any) {
				b["offers"].([]any)[0].(map[any]any)["covers"] = []any{strings.Repeat("x", MaxCoverLine+1)}
			}), "cap-exceeded", "a cover line over 1024 bytes"),
		v("spawn-env-65", S, mutate(spawn, set("env", envVars(65))), "cap-exceeded", "65 env entries; the cap is 64"),
		v("spawn-policy-65-paths", S, mutate(spawn, func(b map[any]any) { sub(b, "policy")["read_exec"] = repeat(65, "/usr") }), "cap-exceeded", "65 read_exec paths; the cap is 64"),
		v("prepare-513-entries", S, mutate(samplePrepare(), set("entries", pathPins(513))), "cap-exceeded", "513 entries; the cap is 512"),
		v("prepare-protocol-4", S, mutate(samplePrepare(), set("protocol", 4)), "invalid-value", "a launcher of protocol 5 knows no other"),
		v("prepare-relative-entry", S, mutate(samplePrepare(), set("entries", []any{map[any]any{"path": "etc/hosts", "dev": 1, "ino": 2}})), "invalid-value", "an entry's path is absolute"),
		v("query-handle-257-bytes", A, message("query", map[any]any{"handle": strings.Repeat("h", 257)}), "cap-exceeded", "an id over 256 bytes"),
		v("submit-call-id-257-bytes", A, mutate(submit, set("call_id", strings.Repeat("c", 257))), "cap-exceeded", "a call id over 256 bytes"),
		v("submit-call-id-int", A, mutate(submit, set("call_id", 7)), "wrong-type", "a call id is text"),

		v("envelope-type-unknown", A, message("exec", map[any]any{}), "unknown-enum", "no such message type"),
		v("submit-profile-unknown", A, mutate(submit, inRequest(set("profile", "huge"))), "unknown-enum", "no such profile"),
		v("submit-profile-case", A, mutate(submit, inRequest(set("profile", "Short"))), "unknown-enum", "enum names are case-sensitive"),
		v("list-kind-unknown", O, message("list", map[any]any{"kind": "everything"}), "unknown-enum", "no such list kind"),
		v("refused-code-unknown", L, message("refused", map[any]any{"code": "NOPE", "detail": ""}), "unknown-enum", "no such error code"),
		v("ready-binding-unknown", L, mutate(sampleReady(false), set("binding", "bound")), "unknown-enum", "no such binding"),
		v("status-outcome-unknown", R, mutate(&Status{Handle: "a", State: StateTerminal, Result: sampleResult()}, func(b map[any]any) { sub(b, "result")["outcome"] = "success" }), "unknown-enum", "no such outcome"),

		v("submit-on-operator", O, mustEncode(submit), "wrong-channel", "an agent request on the operator socket"),
		v("submit-on-reply", R, mustEncode(submit), "wrong-channel", "a request where a reply is expected"),
		v("approve-on-agent", A, mustEncode(&Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 1}), "wrong-channel", "an agent may not approve"),
		v("goal-attest-on-agent", A, mustEncode(&GoalAttest{Goal: "g-1", Step: "review", Statement: "it renders"}), "wrong-channel",
			"an agent may not make the operator's statement an operator criterion asks for"),
		v("spawn-request-on-agent", A, mustEncode(spawn), "wrong-channel", "an agent may not speak launcher"),
		v("ready-on-spawn", S, mustEncode(sampleReady(false)), "wrong-channel", "a launcher reply where a spawn request is expected"),
		v("proceed-on-launcher", L, mustEncode(&Proceed{}), "wrong-channel", "the broker's proceed where a launcher reply is expected"),
		v("proceed-with-field", S, message("proceed", map[any]any{"argv": []any{"sh"}}), "unknown-field", "proceed carries nothing"),
		v("error-on-launcher", L, mustEncode(Errorf(CodeBusy, "x")), "wrong-channel", "a broker reply on the launcher channel"),

		v("query-non-minimal-length", A, message("query", map[any]any{"handle": raw{0x78, 0x05, 'a', 'c', 't', '-', '1'}}), "not-canonical", "text length in a 1-byte argument"),
		v("wait-non-minimal-uint32", A, mutate(wait, set("budget_ms", raw{0x1a, 0, 0, 0x75, 0x30})), "not-canonical", "30000 in a 4-byte argument"),
		v("wait-non-minimal-small", A, mutate(wait, set("budget_ms", raw{0x18, 5})), "not-canonical", "5 in a 1-byte argument"),
		v("ok-non-minimal-map", R, okBody(raw{0xb8, 0}), "not-canonical", "an empty map with a 1-byte length"),
		v("submit-unsorted-keys", A, message("submit", ordered{{"workspace", "/home/u/project"}, {"request", envelopeOf(submit)["body"].(map[any]any)["request"]}}), "not-canonical", "workspace sorted before request"),
		v("envelope-unsorted-keys", A, enc(ordered{{"type", "query"}, {"body", map[any]any{"handle": "a"}}}), "not-canonical", "type before body"),
		v("cancel-empty-reason", A, mutate(&Cancel{Handle: "a"}, set("reason", "")), "not-canonical", "an empty optional member must be absent"),
		v("submit-empty-call-id", A, mutate(submit, set("call_id", "")), "not-canonical", "no call id is an absent call_id, never an empty one"),
		v("list-limit-zero", O, mutate(&List{Kind: ListActions}, set("limit", 0)), "not-canonical", "zero optional member must be absent"),
		v("list-after-empty", O, mutate(&List{Kind: ListActions}, set("after", "")), "not-canonical", "empty optional member must be absent"),
		v("list-limit-over-cap", O, mutate(&List{Kind: ListActions}, set("limit", 513)), "cap-exceeded", "limit over the listing cap"),
		v("follow-offset-over-cap", A, mutate(&Follow{Handle: "act-1"}, set("stdout_from", uint64(1)<<63)), "cap-exceeded", "an offset past 2^63-1"),
		v("listing-truncated-false", R, mutate(&Listing{}, set("truncated", false)), "not-canonical", "false optional member must be absent"),
		v("list-unknown-only-false", O, mutate(&List{Kind: ListActions}, set("unknown_only", false)), "not-canonical", "false optional member must be absent"),

		v("query-handle-int", A, message("query", map[any]any{"handle": 5}), "wrong-type", "an integer for text"),
		v("query-handle-bytes", A, message("query", map[any]any{"handle": []byte("act-1")}), "wrong-type", "bytes for text"),
		v("wait-budget-negative", A, mutate(wait, set("budget_ms", -1)), "wrong-type", "a negative integer for uint32"),
		v("wait-budget-overflow", A, mutate(wait, set("budget_ms", uint64(1)<<32)), "wrong-type", "2^32 for uint32"),
		v("wait-budget-float", A, mutate(wait, set("budget_ms", raw{0xf9, 0x3c, 0x00})), "wrong-type", "a float for an integer"),
		v("submit-argv-text", A, mutate(submit, inRequest(set("argv", "test -j2"))), "wrong-type", "argv as one text, not an array"),
		v("status-group-gone-int", R, mutate(&Status{Handle: "a", State: StateTerminal, Result: sampleResult()}, func(b map[any]any) { sub(b, "result")["group_gone"] = 1 }), "wrong-type", "an integer for a bool"),

		v("query-handle-tagged", A, message("query", map[any]any{"handle": raw{0xd8, 0x20, 0x65, 'a', 'c', 't', '-', '1'}}), "tag", "tag 32 (URI) on a text"),
		v("wait-budget-bignum", A, mutate(wait, set("budget_ms", raw{0xc2, 0x41, 0x05})), "tag", "a bignum for an integer"),
		v("envelope-self-described", A, append([]byte{0xd9, 0xd9, 0xf7}, queryB...), "tag", "the self-describe tag 55799"),

		v("spawn-empty-argv", S, mutate(spawn, set("argv", []any{})), "invalid-value", "argv without argv[0]"),
		v("submit-workspace-relative", A, mutate(submit, set("workspace", "home/u")), "invalid-value", "the workspace must be absolute"),
		v("submit-workspace-unclean", A, mutate(submit, set("workspace", "/home/u/../v")), "invalid-value", "the workspace must be clean"),
		v("approve-zero-uses", O, mutate(&Approve{RequestID: "a", Uses: 1, TTLSeconds: 1}, set("uses", 0)), "invalid-value", "a lease must allow at least one use"),
		v("contract-enable-no-workspace", O, mutate(&ContractEnable{Workspace: "/w", Name: "git", Uses: 1, TTLSeconds: 1, Profile: ProfileShort}, del("workspace")),
			"invalid-value", "without a request the workspace is required"),
		v("contract-offers-no-cover", R, mutate(&ContractOffers{Offers: []ContractOfferItem{{Name: "git", Usage: "git status", Covers: []string{"git status"}, Program: sampleProgram()}}},
			func(b map[any]any) { b["offers"].([]any)[0].(map[any]any)["covers"] = []any{} }), "invalid-value", "an offer covers at least its request"),
		v("contract-offers-cover-empty", R, mutate(&ContractOffers{Offers: []ContractOfferItem{{Name: "git", Usage: "git status", Covers: []string{"git status"}, Program: sampleProgram()}}},
			func(b map[any]any) { b["offers"].([]any)[0].(map[any]any)["covers"] = []any{"git status", ""} }), "missing-field", "a cover line is never empty"),
		v("ready-digest-31-bytes", L, mutate(sampleReady(false), set("executed_sha256", digest(1)[:31])), "invalid-value", "a SHA-256 has 32 bytes"),
		v("spawn-cwd-escape", S, mutate(spawn, func(b map[any]any) { sub(b, "cwd")["path"] = "../x" }), "invalid-value", "cwd escapes the workspace"),
		v("spawn-cwd-absolute", S, mutate(spawn, func(b map[any]any) { sub(b, "cwd")["path"] = "/etc" }), "invalid-value", "cwd must be workspace-relative"),
		v("spawn-env-duplicate-name", S, mutate(spawn, set("env", []any{strs("A", "1"), strs("A", "2")})), "invalid-value", "an env name twice"),
		v("spawn-protect-escape", S, mutate(spawn, set("protect", []any{map[any]any{"path": "../x"}})), "invalid-value", "a bind leaves the workspace"),
		v("spawn-protect-unordered", S, mutate(spawn, set("protect", []any{map[any]any{"path": ".git/hooks"}, map[any]any{"path": ".git"}})), "invalid-value", "a child before its parent"),
		v("spawn-protect-root", S, mutate(spawn, set("protect", []any{map[any]any{"path": "."}})), "invalid-value", "the workspace itself"),
		v("follow-offset-of-another-stream", A, mutate(&Follow{Handle: "act-1", Stream: Stdout}, set("stderr_from", 5)), "invalid-value", "an offset in a stream not followed"),
		v("spawn-home-relative", S, mutate(spawn, set("home", "home")), "invalid-value", "home must be absolute"),

		fr("frame-agent-oversize", A, frame(MaxAgentFrame+1, nil), "oversize-frame", "the header claims 1 MiB + 1; nothing after it is read"),
		fr("frame-spawn-oversize", S, frame(MaxLauncherFrame+1, nil), "oversize-frame", "the header claims 256 KiB + 1"),
		fr("frame-launcher-4gib", L, frame(0xffffffff, nil), "oversize-frame", "the header claims 4 GiB - 1"),
		fr("frame-header-longer", A, frame(uint32(len(queryB)+1), queryB), "frame-length-mismatch", "the header claims one byte more than follows"),
		fr("frame-header-shorter", A, frame(uint32(len(queryB)-1), queryB), "frame-length-mismatch", "the header claims one byte less than follows"),
		fr("frame-3-bytes", A, []byte{0, 0, 1}, "short-frame", "shorter than a header"),
		fr("frame-zero-length", R, frame(0, nil), "empty-frame", "a header of length 0"),
	}
}

// envVars returns n distinct generic env entries.
func envVars(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = strs("V"+strings.Repeat("X", i), "1")
	}
	return out
}

// pathPins is n pins of distinct /etc entries, sorted by path.
func pathPins(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[any]any{"path": fmt.Sprintf("/etc/e%04d", i), "dev": 1, "ino": i + 2}
	}
	return out
}
