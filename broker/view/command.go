package view

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Plain is s as it is when every rune of it prints as itself
// (unicode.IsPrint), else quoted (strconv.Quote escapes each rune that
// does not): a control rune (an escape sequence), a format rune (a bidi
// override, a zero width), a line or paragraph separator, a space other
// than ' ' or a byte of invalid UTF-8 would let the name it is in
// rewrite, hide or reorder what the terminal shows. It is how every
// name a request, a target or the host brings (a path, a host a target
// named to the proxy, a refusal's message) is printed: the card, the
// CLI's rows, a receipt, the broker's refusals.
func Plain(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}

// PlainAll is each of ss through Plain.
func PlainAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Plain(s)
	}
	return out
}

// CommandLine is a command for a person: each word quoted for a POSIX
// shell when it needs it, so that a copy pasted into a shell is the same
// argv. A word holding a control character or invalid UTF-8 is written
// as $'…' with escapes, so that no byte of it reaches the terminal as is.
func CommandLine(exe string, argv []string) string {
	words := make([]string, 0, 1+len(argv))
	words = append(words, ShellQuote(exe))
	for _, a := range argv {
		words = append(words, ShellQuote(a))
	}
	return strings.Join(words, " ")
}

// ShellQuote quotes s for a POSIX shell unless it is plainly safe.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsPrint(r) || r == ' ':
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}
