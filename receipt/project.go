package receipt

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"warrant/wire"
)

// DefaultProjectChars bounds an agent-facing stream projection. Every
// character is at most four bytes, so a projection stays far below wire's
// limit on output text.
const DefaultProjectChars = 64 << 10

// Project returns the agent-facing, deterministic projection of c:
//
//   - the retained head, then — if anything was left out — one marker line
//     saying how many bytes were omitted, then the retained tail;
//   - invalid UTF-8 (including a sequence cut by the retention boundary)
//     becomes U+FFFD;
//   - control characters other than newline and tab, DEL, C1 controls,
//     and the Unicode line/paragraph separators and bidirectional
//     overrides are escaped as \xNN or \uNNNN (a backslash itself is not
//     escaped, so the escapes are readable but not reversible);
//   - at most maxChars characters, counting an escape as its length, taken
//     half from the start of the head and half from the end of the tail.
//
// Truncated is set whenever the text is not the whole redacted stream.
func Project(c *Captured, maxChars int) wire.Stream {
	ev := &c.Evidence
	half := maxChars / 2
	headChars, tailChars := chars(c.Head), chars(c.Tail)
	switch {
	case headChars+tailChars <= maxChars:
		half = headChars
	case headChars < half:
		half = headChars
	case tailChars < maxChars-half:
		half = maxChars - tailChars
	}
	var sb strings.Builder
	cut := writeHead(&sb, c.Head, half)
	omitted := ev.DroppedBytes + ev.WithheldBytes
	marked := omitted > 0 || cut > 0 || tailChars > maxChars-half
	if marked {
		fmt.Fprintf(&sb, "\n[… %d bytes omitted", omitted)
		if skipped := cut + max(0, tailChars-(maxChars-half)); skipped > 0 {
			fmt.Fprintf(&sb, ", %d characters not shown", skipped)
		}
		if ev.Truncation != 0 {
			fmt.Fprintf(&sb, " (%s)", ev.Truncation)
		}
		sb.WriteString(" …]\n")
	}
	writeTail(&sb, c.Tail, maxChars-half)
	return wire.Stream{
		Text:          sb.String(),
		ObservedBytes: ev.ObservedBytes,
		RetainedBytes: ev.RetainedBytes,
		DroppedBytes:  omitted,
		Truncated:     ev.Truncation != 0 || marked,
	}
}

// unit decodes the next output unit of b: one character or its escape.
func unit(b []byte) (text string, size int) {
	r, size := utf8.DecodeRune(b)
	switch {
	case r == utf8.RuneError && size <= 1:
		return "\uFFFD", max(size, 1)
	case r == '\n' || r == '\t':
		return string(r), size
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf(`\x%02x`, r), size
	case r >= 0x80 && r <= 0x9f, r == 0x2028 || r == 0x2029,
		r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return fmt.Sprintf(`\u%04x`, r), size
	}
	return string(b[:size]), size
}

// chars counts the projected characters of b.
func chars(b []byte) int {
	n := 0
	for len(b) > 0 {
		t, size := unit(b)
		n += utf8.RuneCountInString(t)
		b = b[size:]
	}
	return n
}

// writeHead writes the first units of b up to limit characters and returns
// how many characters it left out.
func writeHead(sb *strings.Builder, b []byte, limit int) int {
	for len(b) > 0 {
		t, size := unit(b)
		n := utf8.RuneCountInString(t)
		if n > limit {
			return chars(b)
		}
		sb.WriteString(t)
		limit -= n
		b = b[size:]
	}
	return 0
}

// writeTail writes the last units of b that fit in limit characters.
func writeTail(sb *strings.Builder, b []byte, limit int) {
	skip := chars(b) - limit
	for len(b) > 0 && skip > 0 {
		t, size := unit(b)
		skip -= utf8.RuneCountInString(t)
		b = b[size:]
	}
	for len(b) > 0 {
		t, size := unit(b)
		sb.WriteString(t)
		b = b[size:]
	}
}
