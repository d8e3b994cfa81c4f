package receipt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"warrant/wire"
)

// samples holds one credential of every built-in shape, with the type the
// redactor must report for it.
var samples = []struct{ typ, secret string }{
	{"aws-access-key-id", "AKIAIOSFODNN7EXAMPLE"},
	{"aws-secret-access-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"github-token", "ghp_" + strings.Repeat("aB3", 12)},
	{"github-pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"},
	{"gitlab-token", "glpat-xxxxYYYYzzzz01234567"},
	{"slack-token", "xoxb-123456789012-abcdefABCDEF"},
	{"api-key", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"},
	{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
	{"bearer", "Bearer abcdef0123456789.ZZZ-yyy"},
	{"pem-private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7hW0\nAbCdEf==\n-----END RSA PRIVATE KEY-----"},
	{"exact-secret", "hunter2-correct-horse"},
}

func testRules(t testing.TB) *Ruleset {
	t.Helper()
	rs, err := NewRuleset([]byte("hunter2-correct-horse"))
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// streamRedact redacts data cut at the given sizes (cycled).
func streamRedact(t testing.TB, rs *Ruleset, data []byte, sizes []int) []byte {
	t.Helper()
	var out []byte
	r := rs.NewRedactor(func(b []byte) { out = append(out, b...) })
	for i := 0; len(data) > 0; i++ {
		n := min(len(data), max(1, sizes[i%len(sizes)]))
		if _, err := r.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRedactEveryRule(t *testing.T) {
	rs := testRules(t)
	for _, s := range samples {
		in := []byte("before " + s.secret + " after\n")
		out, hits, err := rs.Redact(in)
		if err != nil {
			t.Fatal(err)
		}
		if want := "before [REDACTED:" + s.typ + "] after\n"; string(out) != want {
			t.Errorf("%s: got %q, want %q", s.typ, out, want)
		}
		if len(hits) != 1 || hits[0] != (Hit{Type: s.typ, Count: 1}) {
			t.Errorf("%s: hits %v", s.typ, hits)
		}
	}
}

// The prefilter samples every second position, so each literal must be
// found at both parities, at either end of a buffer and after any filler:
// the candidate it reports is exactly where the literal starts, except
// that a literal only rules needing a word boundary have is passed over
// after a word byte.
func TestPrefilterFindsEveryLiteral(t *testing.T) {
	rs := testRules(t)
	var lits []string
	bounded := map[string]bool{}
	for _, refs := range rs.pre.refs {
		for _, r := range refs {
			lits = append(lits, r.lit)
			if b, seen := bounded[r.lit]; !seen || b {
				bounded[r.lit] = r.boundary
			}
		}
	}
	want := 0
	for _, m := range rs.rules {
		want += 2 * len(m.lits)
	}
	if len(lits) != want {
		t.Fatalf("%d literal pairs in the table, want %d: two per literal", len(lits), want)
	}
	filler := strings.Repeat("a bearer of bad news ran 0123456789 ", 2)
	for _, lit := range lits {
		for pre := 0; pre < 40; pre++ {
			buf := []byte(filler[:pre] + lit)
			want := pre
			if bounded[lit] && pre > 0 && classWord[buf[pre-1]] {
				want = -1
			}
			for from := 0; from <= min(pre, 3); from++ {
				if got := rs.pre.candidate(buf, from); got != want {
					t.Fatalf("literal %q after %d filler bytes, scan from %d: candidate %d, want %d", lit, pre, from, got, want)
				}
			}
		}
	}
}

func TestRedactLeavesOrdinaryText(t *testing.T) {
	rs := testRules(t)
	in := []byte("task-runner-configuration-abcdefghijkl built; Bearer of news; ABCD; -----BEGIN CERTIFICATE-----\nxx\n")
	out, hits, err := rs.Redact(in)
	if err != nil || !bytes.Equal(out, in) || len(hits) != 0 {
		t.Fatalf("ordinary text changed: %q %v %v", out, hits, err)
	}
}

// A secret split across two chunks at every possible point leaves no
// secret byte in the output.
func TestRedactSplitSecret(t *testing.T) {
	rs := testRules(t)
	for _, s := range samples {
		in := []byte("x " + s.secret + " y")
		want, _, _ := rs.Redact(in)
		for cut := 1; cut < len(in); cut++ {
			got := streamRedact(t, rs, in, []int{cut, len(in)})
			if !bytes.Equal(got, want) {
				t.Fatalf("%s cut at %d: %q, want %q", s.typ, cut, got, want)
			}
			body := s.secret[len(s.secret)-8:]
			if bytes.Contains(got, []byte(body)) {
				t.Fatalf("%s cut at %d: secret bytes %q survived", s.typ, cut, body)
			}
		}
	}
}

func TestRedactStreamEqualsWhole(t *testing.T) {
	rs := testRules(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var in []byte
		for len(in) < 20000 {
			if rng.IntN(4) == 0 {
				in = append(append(in, ' '), samples[rng.IntN(len(samples))].secret...)
			} else {
				in = append(in, "lorem ipsum-dolor_sit AK sk- eyJ gh -----B\n"[rng.IntN(30):]...)
			}
		}
		want, _, _ := rs.Redact(in)
		sizes := []int{1 + rng.IntN(64), 1 + rng.IntN(5000), 1 + rng.IntN(65536)}
		if got := streamRedact(t, rs, in, sizes); !bytes.Equal(got, want) {
			t.Fatalf("round %d sizes %v: streaming output differs from whole-buffer output", round, sizes)
		}
		for _, s := range samples {
			if bytes.Contains(want, []byte(s.secret)) {
				t.Fatalf("round %d: %s survived", round, s.typ)
			}
		}
	}
}

// An over-long token and a PEM block without END line are redacted to the
// end, window after window, not just up to a cap.
func TestRedactContinuation(t *testing.T) {
	rs := testRules(t)
	long := "sk-" + strings.Repeat("a1", 3000) + " tail"
	out, _, _ := rs.Redact([]byte(long))
	if string(out) != "[REDACTED:api-key] tail" {
		t.Fatalf("long token: %q", out)
	}
	pem := "-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("QUJD\n", 20000)
	out, _, _ = rs.Redact([]byte(pem + "-----END PRIVATE KEY-----\nok"))
	if string(out) != "[REDACTED:pem-private-key]\nok" {
		t.Fatalf("long pem: %q", out[:min(len(out), 200)])
	}
	if got := streamRedact(t, rs, []byte(pem), []int{4096}); string(got) != "[REDACTED:pem-private-key]" {
		t.Fatalf("unterminated pem: %q", got[:min(len(got), 200)])
	}
}

func TestRulesetRefusesBadSecrets(t *testing.T) {
	if _, err := NewRuleset([]byte("short")); err == nil {
		t.Fatal("a 5-byte exact secret was accepted")
	}
	if _, err := NewRuleset(make([]byte, MaxSecret+1)); err == nil {
		t.Fatal("an over-long exact secret was accepted")
	}
	if _, err := NewRuleset(make([][]byte, maxSecrets+1)...); err == nil {
		t.Fatalf("%d exact secrets were accepted", maxSecrets+1)
	}
}

// The most exact secrets a ruleset takes, each with pairs of its own, fit
// the prefilter's table, and every one of them is redacted.
func TestRulesetHoldsMostSecrets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	secrets := make([][]byte, maxSecrets)
	var in []byte
	for i := range secrets {
		s := make([]byte, 12)
		for j := range s {
			s[j] = byte(33 + rng.IntN(94))
		}
		secrets[i] = s
		in = append(append(in, s...), '\n')
	}
	rs, err := NewRuleset(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	out, hits, err := rs.Redact(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("[REDACTED:exact-secret]\n", maxSecrets); string(out) != want ||
		len(hits) != 1 || hits[0].Count != maxSecrets {
		t.Fatalf("%d secrets: output %q, hits %v", maxSecrets, out, hits)
	}
}

// A failing rule blocks the stream: nothing after the failure, and none of
// the bytes it held, is ever released.
func TestRedactorFailureBlocks(t *testing.T) {
	rs := testRules(t)
	rs.add(matcher{name: "broken", lits: []string{"BOOM"}, width: 8,
		match: func([]byte) (int, cont) { panic("rule exploded") }})
	var out []byte
	r := rs.NewRedactor(func(b []byte) { out = append(out, b...) })
	_, err := r.Write([]byte("safe text BOOM raw-secret-bytes"))
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeEvidenceBlocked {
		t.Fatalf("error = %v, want EVIDENCE_BLOCKED", err)
	}
	if _, err := r.Write([]byte("more raw")); err == nil {
		t.Fatal("a blocked redactor accepted more input")
	}
	if _, err := r.Close(); err == nil {
		t.Fatal("a blocked redactor closed cleanly")
	}
	if bytes.Contains(out, []byte("raw")) || bytes.Contains(out, []byte("BOOM")) {
		t.Fatalf("raw bytes passed a failed redactor: %q", out)
	}
}

// Output that cannot be the start of a secret is released as soon as it
// is written, so a live follower sees a line while the stream goes on;
// only a possible start of a secret is held, and no byte of a secret
// written in pieces is ever released.
func TestRedactReleasesDecidedOutput(t *testing.T) {
	rs := testRules(t)
	var out []byte
	r := rs.NewRedactor(func(b []byte) { out = append(out, b...) })
	step := func(in, want string) {
		t.Helper()
		if _, err := r.Write([]byte(in)); err != nil {
			t.Fatal(err)
		}
		if string(out) != want {
			t.Fatalf("after writing %q: released %q, want %q", in, out, want)
		}
	}
	step("ready\n", "ready\n")
	step("token: gh", "ready\ntoken: ") // "gh" may begin "ghp_"
	step("p_"+strings.Repeat("aB3", 12)+"\n", "ready\ntoken: ")
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	want, _, _ := rs.Redact([]byte("ready\ntoken: ghp_" + strings.Repeat("aB3", 12) + "\n"))
	if !bytes.Equal(out, want) || bytes.Contains(out, []byte("aB3aB3")) {
		t.Fatalf("at the end: %q, want %q", out, want)
	}
	// An exact secret written in pieces: its start is held, never released.
	out = nil
	r = rs.NewRedactor(func(b []byte) { out = append(out, b...) })
	step("pw hunter2-corr", "pw ")
	step("ect-horse", "pw [REDACTED:exact-secret]")
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("hunter")) {
		t.Fatalf("the exact secret survived: %q", out)
	}
}
