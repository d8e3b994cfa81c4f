package fuzz

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"warrant/launcher/darwin"
	"warrant/wire"
)

// FuzzSBPLPath checks that no path can inject SBPL syntax into a macOS
// launcher profile. The fuzzed path is put in every slot of a Spec at
// once (workspace, executable, script, read_exec, read_write, devices).
// The profile is read back with a small Scheme reader and compared with
// the profile of a benign twin: the same path with every byte other than
// [A-Za-z0-9/] replaced by 'x', which has the same components, the same
// length and the same prefix relations, and so the same rules. The two
// must have the same token structure, and every string atom must equal
// its twin or map onto it; the fuzzed path itself must appear as whole
// string atoms exactly where its twin does. A path the generator refuses
// must be one it cannot represent, refused with PATH_INVALID.
func FuzzSBPLPath(f *testing.F) {
	for _, s := range []string{"/Users/me/proj", `/a"b`, `/a\b`, `/")"`, "/a\nb", "/日本/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, e := darwin.Profile(sbplSpec(p))
		mapped := sbplMapped(p)
		if e != nil {
			if sbplRepresentable(mapped) {
				t.Fatalf("refused the representable path %q: %v", p, e)
			}
			if e.Code != wire.CodePathInvalid {
				t.Fatalf("refused %q with %v, want PATH_INVALID", p, e.Code)
			}
			return
		}
		if !sbplRepresentable(mapped) {
			t.Fatalf("accepted the unrepresentable path %q", p)
		}
		ref, e := darwin.Profile(sbplSpec(sbplTwin(p)))
		if e != nil {
			t.Fatalf("refused the benign twin %q: %v", sbplTwin(p), e)
		}
		a, err := readSBPL(got)
		if err != nil {
			t.Fatalf("profile for %q does not read back: %v\n%s", p, err, got)
		}
		b, err := readSBPL(ref)
		if err != nil {
			t.Fatalf("profile for the twin does not read back: %v", err)
		}
		if len(a) != len(b) {
			t.Fatalf("path %q changed the profile's structure: %d tokens, twin has %d\n%s", p, len(a), len(b), got)
		}
		seen, twinSeen := 0, 0
		for i := range a {
			x, y := a[i], b[i]
			if x.kind != y.kind || (x.kind != sbplString && x.text != y.text) {
				t.Fatalf("token %d differs: %+v vs twin %+v\n%s", i, x, y, got)
			}
			if x.kind == sbplString && x.text != y.text && sbplTwin(x.text) != y.text {
				t.Fatalf("string atom %d is %q, twin has %q", i, x.text, y.text)
			}
			if x.kind == sbplString && x.text == mapped {
				seen++
			}
			if y.kind == sbplString && y.text == sbplTwin(mapped) {
				twinSeen++
			}
		}
		if seen == 0 || seen != twinSeen {
			t.Fatalf("path %q appears as %d whole string atoms, its twin as %d", mapped, seen, twinSeen)
		}
	})
}

// TestReadSBPL checks the test's own reader on forms it must split.
func TestReadSBPL(t *testing.T) {
	toks, err := readSBPL("(allow x ; c \"\n (literal \"a\\\"b\\\\\")) 'q")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, string(tk.kind)+tk.text)
	}
	want := `( aallow ax ( aliteral sa"b\ ) ) '' aq`
	if strings.Join(got, " ") != want {
		t.Fatalf("read %q, want %q", strings.Join(got, " "), want)
	}
	for _, bad := range []string{`(a "open`, "(a", "a)", `"\x4"`} {
		if _, err := readSBPL(bad); err == nil {
			t.Errorf("reader accepted %q", bad)
		}
	}
}

// sbplSpec puts p in every path slot; the fixed paths hold only
// [a-wyzA-Z0-9/] so a twin cannot collide with them.
func sbplSpec(p string) darwin.Spec {
	return darwin.Spec{
		Policy:    wire.Policy{ReadExec: []string{p}, ReadWrite: []string{p}, Devices: []string{p, "/dev/null"}},
		Workspace: p,
		Home:      "/Users/me/home",
		Tmp:       "/Users/me/tmp",
		Exec:      p,
		Script:    p,
	}
}

// sbplTwin replaces every byte of s other than [A-Za-z0-9/] with 'x'.
func sbplTwin(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b[i] = 'x'
		}
	}
	return string(b)
}

// sbplMapped is the macOS root-symlink mapping the generator documents.
func sbplMapped(p string) string {
	for _, l := range []string{"/etc", "/tmp", "/var"} {
		if p == l || strings.HasPrefix(p, l+"/") {
			return "/private" + p
		}
	}
	return p
}

// sbplRepresentable is the oracle for what a profile can hold: a clean
// absolute path within macOS PATH_MAX, valid UTF-8, no control character.
func sbplRepresentable(p string) bool {
	return len(p) <= 1024 && utf8.ValidString(p) && path.IsAbs(p) && path.Clean(p) == p &&
		!strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

type sbplTokKind byte

const (
	sbplOpen   sbplTokKind = '('
	sbplClose  sbplTokKind = ')'
	sbplQuote  sbplTokKind = '\''
	sbplAtom   sbplTokKind = 'a'
	sbplString sbplTokKind = 's'
)

type sbplToken struct {
	kind sbplTokKind
	text string
}

// readSBPL tokenizes SBPL the way a TinyScheme-style reader does:
// comments from ';' to the end of the line; strings with backslash
// escapes (\n \t \r, \xHH, octal, and any other character standing for
// itself); parentheses; quote marks; atoms up to a delimiter. Parentheses
// must balance.
func readSBPL(src string) ([]sbplToken, error) {
	var out []sbplToken
	depth := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == ';':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '(' || c == ')':
			if c == '(' {
				depth++
			} else if depth--; depth < 0 {
				return nil, errors.New("unbalanced ')'")
			}
			out = append(out, sbplToken{kind: sbplTokKind(c)})
			i++
		case c == '\'' || c == '`' || c == ',':
			out = append(out, sbplToken{kind: sbplQuote, text: string(c)})
			i++
		case c == '"':
			s, n, err := readSBPLString(src[i+1:])
			if err != nil {
				return nil, err
			}
			out = append(out, sbplToken{kind: sbplString, text: s})
			i += 1 + n
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\n\r\f;()\"'`,", rune(src[j])) {
				j++
			}
			out = append(out, sbplToken{kind: sbplAtom, text: src[i:j]})
			i = j
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced '('")
	}
	return out, nil
}

// readSBPLString reads a string body after its opening quote and returns the
// value and the bytes consumed, closing quote included.
func readSBPLString(src string) (string, int, error) {
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			i++
			if i == len(src) {
				return "", 0, errors.New("string ends in a backslash")
			}
			switch e := src[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'x', 'X':
				if i+2 >= len(src) || !sbplIsHex(src[i+1]) || !sbplIsHex(src[i+2]) {
					return "", 0, errors.New("bad \\x escape")
				}
				b.WriteByte(sbplUnhex(src[i+1])<<4 | sbplUnhex(src[i+2]))
				i += 2
			default:
				if e >= '0' && e <= '7' {
					v, n := 0, 0
					for ; n < 3 && i+n < len(src) && src[i+n] >= '0' && src[i+n] <= '7'; n++ {
						v = v*8 + int(src[i+n]-'0')
					}
					b.WriteByte(byte(v))
					i += n - 1
				} else {
					b.WriteByte(e)
				}
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("unterminated string")
}

func sbplIsHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func sbplUnhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
