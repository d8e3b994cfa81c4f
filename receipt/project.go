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
//   - the start of the retained head, then — if anything was left out —
//     the omission marker (OmissionMarker) counting every byte of the
//     redacted stream the text does not show (and any withheld raw
//     bytes), with the stream's truncation reason when those are exactly
//     the bytes the receipt left out, then the end of the retained tail;
//   - invalid UTF-8 (including a sequence cut by the retention boundary)
//     becomes U+FFFD;
//   - control characters other than newline and tab, DEL, C1 controls,
//     and the Unicode line/paragraph separators and bidirectional
//     overrides are escaped as \xNN or \uNNNN (a backslash itself is not
//     escaped, so the escapes are readable but not reversible);
//   - at most maxChars characters, counting an escape as its length, taken
//     half from the start of the head and half from the end of the tail.
//
// TextHeadBytes and TextTailBytes say exactly which bytes of the redacted
// stream the text shows; RetainedHeadBytes and RetainedBytes which the
// receipt keeps. Truncated is set whenever the text is not the whole
// redacted stream.
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
	var head, tail strings.Builder
	headBytes := writeHead(&head, c.Head, half)
	tailBytes := writeTail(&tail, c.Tail, maxChars-half)
	omitted := ev.RedactedBytes - uint64(headBytes+tailBytes) + ev.WithheldBytes
	if omitted > 0 {
		why := ev.Truncation // why the receipt left bytes out: only said when the text shows all it kept
		if omitted != ev.DroppedBytes+ev.WithheldBytes {
			why = 0
		}
		head.WriteString(OmissionMarker(omitted, why))
	}
	head.WriteString(tail.String())
	return wire.Stream{
		Text:              head.String(),
		ObservedBytes:     ev.ObservedBytes,
		RedactedBytes:     ev.RedactedBytes,
		TextHeadBytes:     uint64(headBytes),
		TextTailBytes:     uint64(tailBytes),
		RetainedHeadBytes: ev.Head.End,
		RetainedBytes:     ev.RetainedBytes,
		DroppedBytes:      ev.DroppedBytes + ev.WithheldBytes,
		Truncated:         ev.Truncation != 0 || omitted > 0,
	}
}

// OmissionMarker is the line put where omitted bytes were: between a
// projection's head and tail, and between the retained head and tail that
// `broker output` prints.
func OmissionMarker(omitted uint64, why Truncation) string {
	reason := ""
	if why != 0 {
		reason = " (" + why.String() + ")"
	}
	return fmt.Sprintf("\n[… %d bytes omitted%s …]\n", omitted, reason)
}

// unit measures the next output unit of b (len(b) > 0): one character
// or its escape. It returns how many characters the unit is written as
// and how many bytes of b it takes. Ordinary ASCII takes one comparison.
func unit(b []byte) (n, size int) {
	if c := b[0]; c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
		return 1, 1
	} else if c < 0x80 {
		return len(`\x00`), 1
	}
	r, size := utf8.DecodeRune(b)
	switch {
	case r == utf8.RuneError && size <= 1:
		return 1, 1
	case escapedRune(r):
		return len(`\u0000`), size
	}
	return 1, size
}

// escapedRune reports whether the non-ASCII rune r is escaped: C1
// controls, the line and paragraph separators, bidirectional controls.
func escapedRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

const hexDigits = "0123456789abcdef"

// writeUnit writes the next output unit of b and returns the bytes of b
// it takes: the character, U+FFFD for invalid UTF-8, or \xNN / \uNNNN.
func writeUnit(sb *strings.Builder, b []byte) int {
	n, size := unit(b)
	switch {
	case n == len(`\x00`):
		sb.WriteString(`\x`)
		sb.WriteByte(hexDigits[b[0]>>4])
		sb.WriteByte(hexDigits[b[0]&0xf])
	case n == len(`\u0000`):
		r, _ := utf8.DecodeRune(b)
		sb.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			sb.WriteByte(hexDigits[r>>shift&0xf])
		}
	case b[0] >= 0x80 && size == 1: // invalid UTF-8 (a valid rune here is at least two bytes)
		sb.WriteRune(utf8.RuneError)
	default:
		sb.Write(b[:size])
	}
	return size
}

// chars counts the projected characters of b.
func chars(b []byte) int {
	total := 0
	for len(b) > 0 {
		n, size := unit(b)
		total += n
		b = b[size:]
	}
	return total
}

// writeHead writes the first units of b up to limit characters and returns
// how many bytes of b they are.
func writeHead(sb *strings.Builder, b []byte, limit int) int {
	done := 0
	for done < len(b) {
		n, _ := unit(b[done:])
		if n > limit {
			break
		}
		done += writeUnit(sb, b[done:])
		limit -= n
	}
	return done
}

// writeTail writes the last units of b that fit in limit characters and
// returns how many bytes of b they are.
func writeTail(sb *strings.Builder, b []byte, limit int) int {
	skip := chars(b) - limit
	for len(b) > 0 && skip > 0 {
		n, size := unit(b)
		skip -= n
		b = b[size:]
	}
	for rest := b; len(rest) > 0; {
		rest = rest[writeUnit(sb, rest):]
	}
	return len(b)
}
