package logtext

import (
	"io"
	"math/rand/v2"
	"strings"
)

// words are the words of ordinary lines: build and service log output
// with paths, hyphenated and snake_case words, and prose.
var words = strings.Fields("the build of package internal/fsid finished in 1.2s with no errors " +
	"go-test run_all worker-3 request id=4711 path=/api/v1/items status=200 took 12ms " +
	"Compiling src/main.rs a bearer of bad news Alice and Bob make_target x86-64 ALL_CAPS " +
	"desk-lamp task-runner ok PASS FAIL --- === retry")

// nearMisses start like a credential and are none: one ordinary line in
// 8 ends with one, which redaction must look at and leave as it is.
var nearMisses = strings.Fields("ghp_docs AKIAdocs eyJ sk- xoxb- Bearer glpat- -----BEGIN")

var levels = []string{"INFO", "WARN", "DEBUG", "ERROR"}

// secret is a credential line: keep, the rule's literal lit, n bytes
// from class (the secret), then suffix. What redaction leaves of it is
// keep, the rule's placeholder, suffix.
type secret struct {
	rule, keep, lit, suffix, class string
	n                              int
}

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b64url  = alnum + "-_"
	token68 = alnum + "-._~+/"
)

// secrets are the credential lines, one shape per built-in rule that a
// log plausibly holds.
var secrets = []secret{
	{"github-token", "export GITHUB_TOKEN=", "ghp_", "\n", alnum, 36},
	{"aws-access-key-id", "aws_access_key_id = ", "AKIA", "\n", upper, 16},
	{"bearer", "curl -H 'Authorization: ", "Bearer ", "' https://api.example.com/v1/items\n", token68, 40},
	{"api-key", "OPENAI_API_KEY=", "sk-", " # rotated\n", b64url, 48},
	{"slack-token", "posting to slack with ", "xoxb-", "\n", alnum + "-", 40},
	{"jwt", "set-cookie: session=", "eyJ", "; Path=/; HttpOnly\n", b64url + ".", 120},
}

// Log makes the lines of one log, the same for the same seed.
type Log struct {
	rng      *rand.Rand
	raw, red []byte
}

// New returns the log of seed.
func New(seed uint64) *Log { return &Log{rng: rand.New(rand.NewPCG(seed, seed))} }

// Line returns the next line, what redaction must make of it, and the
// rule that does so ("" for none): a timestamped line of words, or one
// time in 64 a credential line. The slices are valid until the next call.
func (l *Log) Line() (raw, redacted []byte, rule string) {
	l.raw, l.red = l.raw[:0], l.red[:0]
	if l.rng.IntN(64) != 0 {
		l.raw = l.appendWords(l.raw)
		return l.raw, l.raw, ""
	}
	s := secrets[l.rng.IntN(len(secrets))]
	l.raw = append(append(l.raw, s.keep...), s.lit...)
	for range s.n {
		l.raw = append(l.raw, s.class[l.rng.IntN(len(s.class))])
	}
	l.raw = append(l.raw, s.suffix...)
	l.red = append(append(append(l.red, s.keep...), "[REDACTED:"+s.rule+"]"...), s.suffix...)
	return l.raw, l.red, s.rule
}

// Pad returns a line of n bytes (n >= 1) that redaction leaves as it is,
// to end a log at an exact size.
func Pad(n int) []byte { return []byte(strings.Repeat(".", n-1) + "\n") }

// MaxLine bounds the length of every line Line returns.
const MaxLine = 512

func (l *Log) appendWords(b []byte) []byte {
	rng := l.rng
	b = append(b, "2026-01-02T03:"...)
	b = append2(b, rng.IntN(60))
	b = append(b, ':')
	b = append2(b, rng.IntN(60))
	b = append(b, '.')
	b = append2(b, rng.IntN(100))
	b = append(b, "Z "...)
	b = append(b, levels[rng.IntN(len(levels))]...)
	for range 4 + rng.IntN(12) {
		b = append(append(b, ' '), words[rng.IntN(len(words))]...)
	}
	if rng.IntN(8) == 0 {
		b = append(append(b, ' '), nearMisses[rng.IntN(len(nearMisses))]...)
	}
	return append(b, '\n')
}

// append2 appends v (0..99) as two digits.
func append2(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

// Write writes exactly size bytes of the log of seed to w, giving each
// line to line (nil: none) with what redaction must make of it and the
// rule that does so; a last Pad line makes up the size.
func Write(w io.Writer, size int64, seed uint64, line func(raw, redacted []byte, rule string)) error {
	l := New(seed)
	for n := int64(0); n < size; {
		raw, red, rule := l.Line()
		if size-n < MaxLine {
			raw = Pad(int(size - n))
			red, rule = raw, ""
		}
		if line != nil {
			line(raw, red, rule)
		}
		if _, err := w.Write(raw); err != nil {
			return err
		}
		n += int64(len(raw))
	}
	return nil
}
