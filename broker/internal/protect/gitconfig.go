package protect

import "strings"

// MaxConfig bounds the bytes of one git config file parsed; a larger one
// leaves what it sets unchecked.
const MaxConfig = 1 << 20

// GitConfig calls visit with each variable of a git config file, in
// order: its name as git compares it (section and key lowercased, a
// subsection kept: "core.hookspath", "includeif.gitdir:~/w/.path") and
// its value (set false for a key without "=", a boolean). It follows
// git's config.c; where git would stop with "bad config line" it stops
// (git then runs nothing of that config at all) and returns false.
func GitConfig(data []byte, visit func(name, value string, set bool)) bool {
	p := &configParser{b: data}
	if strings.HasPrefix(string(data), "\xef\xbb\xbf") {
		p.i = 3
	}
	section := ""
	for {
		c := p.next()
		switch {
		case c == '\n' && p.eof:
			return true
		case c == '\n' || isSpace(c):
		case c == '#' || c == ';':
			for c != '\n' {
				c = p.next()
			}
			if p.eof {
				return true
			}
		case c == '[':
			s, ok := p.section()
			if !ok {
				return false
			}
			section = s
		case isAlpha(c) && section != "":
			name, value, set, ok := p.variable(c)
			if !ok {
				return false
			}
			visit(section+"."+name, value, set)
		default:
			return false
		}
	}
}

type configParser struct {
	b   []byte
	i   int
	eof bool
}

// next is git's get_next_char: "\r\n" reads as "\n", and the end of the
// data as a final "\n".
func (p *configParser) next() byte {
	if p.i >= len(p.b) {
		p.eof = true
		return '\n'
	}
	c := p.b[p.i]
	p.i++
	if c == '\r' && p.i < len(p.b) && p.b[p.i] == '\n' {
		p.i++
		c = '\n'
	}
	return c
}

// section reads "name]" or `name "subsection"]` after a '['.
func (p *configParser) section() (string, bool) {
	var name strings.Builder
	for {
		c := p.next()
		switch {
		case p.eof:
			return "", false
		case c == ']':
			return name.String(), name.Len() > 0
		case isSpace(c):
			for isSpace(c) {
				if c == '\n' {
					return "", false
				}
				c = p.next()
			}
			if c != '"' {
				return "", false
			}
			name.WriteByte('.')
			for {
				c = p.next()
				if c == '\n' {
					return "", false
				}
				if c == '"' {
					break
				}
				if c == '\\' {
					if c = p.next(); c == '\n' {
						return "", false
					}
				}
				name.WriteByte(c)
			}
			return name.String(), p.next() == ']'
		case isKey(c) || c == '.':
			name.WriteByte(lower(c))
		default:
			return "", false
		}
	}
}

// variable reads a key starting with first, and its value.
func (p *configParser) variable(first byte) (name, value string, set, ok bool) {
	var key strings.Builder
	key.WriteByte(lower(first))
	c := p.next()
	for !p.eof && isKey(c) {
		key.WriteByte(lower(c))
		c = p.next()
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	if c == '\n' {
		return key.String(), "", false, true
	}
	if c != '=' {
		return "", "", false, false
	}
	value, ok = p.value()
	return key.String(), value, true, ok
}

// value is git's parse_value: whitespace outside quotes trimmed at both
// ends and kept (as spaces) inside, '#' and ';' start a comment outside
// quotes, and \t \b \n \\ \" and an escaped newline are its escapes.
func (p *configParser) value() (string, bool) {
	var v strings.Builder
	quote, comment, space := false, false, 0
	for {
		c := p.next()
		switch {
		case c == '\n':
			return v.String(), !quote
		case comment:
		case isSpace(c) && !quote:
			if v.Len() > 0 {
				space++
			}
		case !quote && (c == ';' || c == '#'):
			comment = true
		default:
			for ; space > 0; space-- {
				v.WriteByte(' ')
			}
			switch c {
			case '\\':
				switch c = p.next(); c {
				case '\n':
					continue
				case 't':
					c = '\t'
				case 'b':
					c = '\b'
				case 'n':
					c = '\n'
				case '\\', '"':
				default:
					return "", false
				}
				v.WriteByte(c)
			case '"':
				quote = !quote
			default:
				v.WriteByte(c)
			}
		}
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isKey(c byte) bool   { return isAlpha(c) || '0' <= c && c <= '9' || c == '-' }
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c | 0x20
	}
	return c
}
