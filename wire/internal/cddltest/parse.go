package cddltest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Kind is the shape of one alternative of a type.
type Kind int

// The kinds of alternative.
const (
	Ref   Kind = iota + 1 // a rule name or a prelude type name
	Text                  // a text literal
	Range                 // an integer range lo..hi
	Map                   // a closed map of members
	Array                 // an array of entries
)

// Type is a choice of one or more alternatives.
type Type []*Alt

// Alt is one alternative of a type.
type Alt struct {
	Kind    Kind
	Name    string   // Ref
	Text    string   // Text
	Lo, Hi  int64    // Range, and the .size bounds when HasSize
	HasSize bool     // Ref with a .size control
	Members []Member // Map
	Entries []Entry  // Array
}

// Member is one member of a map.
type Member struct {
	Key      string
	Optional bool
	Type     Type
}

// Entry is one entry of an array, with its occurrence bounds.
type Entry struct {
	Name     string // the positional name, if any
	Min, Max int
	Type     Type
}

// Schema is a parsed CDDL file.
type Schema struct {
	Rules map[string]Type
	Order []string // rule names in file order
}

// Parse parses src, which must stay within the package's subset.
func Parse(src string) (*Schema, error) {
	p := &parser{toks: tokenize(src)}
	s := &Schema{Rules: map[string]Type{}}
	for !p.done() {
		name := p.next()
		if !isIdent(name) {
			return nil, fmt.Errorf("parse cddl: rule name expected, got %q", name)
		}
		if err := p.expect("="); err != nil {
			return nil, err
		}
		t, err := p.typ()
		if err != nil {
			return nil, fmt.Errorf("parse cddl: rule %s: %w", name, err)
		}
		if _, dup := s.Rules[name]; dup {
			return nil, fmt.Errorf("parse cddl: rule %s defined twice", name)
		}
		s.Rules[name] = t
		s.Order = append(s.Order, name)
	}
	for _, name := range s.Order {
		if err := s.checkRefs(s.Rules[name]); err != nil {
			return nil, fmt.Errorf("parse cddl: rule %s: %w", name, err)
		}
	}
	return s, nil
}

var prelude = map[string]bool{"tstr": true, "bstr": true, "uint": true, "int": true,
	"bool": true, "true": true, "false": true}

func (s *Schema) checkRefs(t Type) error {
	for _, a := range t {
		switch a.Kind {
		case Ref:
			if _, ok := s.Rules[a.Name]; !ok && !prelude[a.Name] {
				return fmt.Errorf("undefined name %s", a.Name)
			}
		case Map:
			for _, m := range a.Members {
				if err := s.checkRefs(m.Type); err != nil {
					return err
				}
			}
		case Array:
			for _, e := range a.Entries {
				if err := s.checkRefs(e.Type); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

type parser struct {
	toks []string
	pos  int
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() string {
	if p.done() {
		return ""
	}
	return p.toks[p.pos]
}

// peekAt returns the token i places ahead.
func (p *parser) peekAt(i int) string {
	if p.pos+i >= len(p.toks) {
		return ""
	}
	return p.toks[p.pos+i]
}

func (p *parser) next() string {
	t := p.peek()
	p.pos++
	return t
}

func (p *parser) expect(tok string) error {
	if got := p.next(); got != tok {
		return fmt.Errorf("expected %q, got %q", tok, got)
	}
	return nil
}

// typ parses alternatives separated by "/".
func (p *parser) typ() (Type, error) {
	var t Type
	for {
		a, err := p.alt()
		if err != nil {
			return nil, err
		}
		t = append(t, a)
		if p.peek() != "/" {
			return t, nil
		}
		p.next()
	}
}

func (p *parser) alt() (*Alt, error) {
	tok := p.next()
	switch {
	case tok == "{":
		return p.mapBody()
	case tok == "[":
		return p.arrayBody()
	case strings.HasPrefix(tok, `"`):
		s, err := strconv.Unquote(tok)
		return &Alt{Kind: Text, Text: s}, err
	case isInt(tok):
		lo, hi, err := p.rangeFrom(tok)
		return &Alt{Kind: Range, Lo: lo, Hi: hi}, err
	case isIdent(tok):
		a := &Alt{Kind: Ref, Name: tok}
		if p.peek() == ".size" {
			p.next()
			var err error
			a.HasSize = true
			a.Lo, a.Hi, err = p.size()
			if err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("unexpected %q", tok)
}

// size parses the argument of .size: N, or (lo..hi).
func (p *parser) size() (int64, int64, error) {
	tok := p.next()
	if tok == "(" {
		lo, hi, err := p.rangeFrom(p.next())
		if err == nil {
			err = p.expect(")")
		}
		return lo, hi, err
	}
	n, err := strconv.ParseInt(tok, 10, 64)
	return n, n, err
}

// rangeFrom parses "lo..hi" whose first token has been read.
func (p *parser) rangeFrom(first string) (int64, int64, error) {
	lo, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	if err := p.expect(".."); err != nil {
		return 0, 0, err
	}
	hi, err := strconv.ParseInt(p.next(), 10, 64)
	if err == nil && hi < lo {
		err = fmt.Errorf("empty range %d..%d", lo, hi)
	}
	return lo, hi, err
}

func (p *parser) mapBody() (*Alt, error) {
	a := &Alt{Kind: Map}
	seen := map[string]bool{}
	for p.peek() != "}" {
		m := Member{}
		if p.peek() == "?" {
			p.next()
			m.Optional = true
		}
		key := p.next()
		if strings.HasPrefix(key, `"`) {
			var err error
			if key, err = strconv.Unquote(key); err != nil {
				return nil, err
			}
		} else if !isIdent(key) {
			return nil, fmt.Errorf("map key expected, got %q", key)
		}
		if seen[key] {
			return nil, fmt.Errorf("map key %q twice", key)
		}
		seen[key] = true
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		t, err := p.typ()
		if err != nil {
			return nil, err
		}
		m.Key, m.Type = key, t
		a.Members = append(a.Members, m)
		if p.peek() != "," {
			break
		}
		p.next()
	}
	return a, p.expect("}")
}

func (p *parser) arrayBody() (*Alt, error) {
	a := &Alt{Kind: Array}
	for p.peek() != "]" {
		e := Entry{Min: 1, Max: 1}
		if err := p.occurrence(&e); err != nil {
			return nil, err
		}
		if isIdent(p.peek()) && p.peekAt(1) == ":" {
			e.Name = p.next()
			p.next()
		}
		t, err := p.typ()
		if err != nil {
			return nil, err
		}
		e.Type = t
		a.Entries = append(a.Entries, e)
		if p.peek() != "," {
			break
		}
		p.next()
	}
	return a, p.expect("]")
}

// occurrence parses an optional occurrence indicator: ?, +, *, n*, *m, n*m.
func (p *parser) occurrence(e *Entry) error {
	tok := p.peek()
	switch {
	case tok == "?":
		e.Min, e.Max = 0, 1
	case tok == "+":
		e.Min, e.Max = 1, math.MaxInt
	case tok == "*":
		e.Min, e.Max = 0, math.MaxInt
		if isInt(p.peekAt(1)) {
			p.next()
			n, err := strconv.Atoi(p.peek())
			if err != nil {
				return err
			}
			e.Max = n
		}
	case isInt(tok) && p.peekAt(1) == "*":
		n, err := strconv.Atoi(tok)
		if err != nil {
			return err
		}
		p.next()
		e.Min, e.Max = n, math.MaxInt
		if isInt(p.peekAt(1)) {
			p.next()
			if e.Max, err = strconv.Atoi(p.peek()); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	p.next()
	if e.Max < e.Min {
		return fmt.Errorf("empty occurrence %d*%d", e.Min, e.Max)
	}
	return nil
}

// tokenize splits src into punctuation, "..", ".size", quoted text,
// integers and identifiers, dropping comments and white space.
func tokenize(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ';':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case unicode.IsSpace(rune(c)):
			i++
		case strings.HasPrefix(src[i:], ".."):
			toks = append(toks, "..")
			i += 2
		case strings.HasPrefix(src[i:], ".size"):
			toks = append(toks, ".size")
			i += 5
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			toks = append(toks, src[i:min(j+1, len(src))])
			i = j + 1
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		case isIdentByte(c):
			j := i
			for j < len(src) && (isIdentByte(src[j]) || src[j] == '-' || (src[j] >= '0' && src[j] <= '9')) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c == '@' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdent(tok string) bool { return tok != "" && isIdentByte(tok[0]) }

func isInt(tok string) bool {
	_, err := strconv.ParseInt(tok, 10, 64)
	return err == nil
}
