package contract

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"warrant/wire"
)

// The names of the grammar, each an ASCII class for its first byte and
// one for the rest, checked byte by byte (nameOf): as regular expressions
// (^[a-z][a-z0-9-]{0,63}$ …) their counted repetitions compiled into
// thousands of instructions at every start of every binary linking this
// package, 3.8 ms of the thin client's.
const (
	lower = "abcdefghijklmnopqrstuvwxyz"
	alnum = lower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

// nameOf reports whether s is one byte of first, then at most max-1
// bytes of rest. The classes are ASCII, so a byte is a character.
func nameOf(s string, max int, first, rest string) bool {
	if s == "" || len(s) > max || strings.IndexByte(first, s[0]) < 0 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if strings.IndexByte(rest, s[i]) < 0 {
			return false
		}
	}
	return true
}

// contractName is ^[a-z][a-z0-9-]{0,63}$.
func contractName(s string) bool { return nameOf(s, 64, lower, lower+"0123456789-") }

// slotName is ^[a-z][a-z0-9-]{0,31}$.
func slotName(s string) bool { return nameOf(s, 32, lower, lower+"0123456789-") }

// flagName is ^--?[A-Za-z0-9][A-Za-z0-9_.-]{0,61}$.
func flagName(s string) bool {
	s, ok := strings.CutPrefix(s, "-")
	if !ok {
		return false
	}
	s, _ = strings.CutPrefix(s, "-") // the name's first byte is never "-"
	return nameOf(s, 62, alnum, alnum+"_.-")
}

// bareName is ^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$.
func bareName(s string) bool { return nameOf(s, 128, alnum, alnum+"._+-") }

// printable reports whether s is non-empty printable ASCII (space to
// tilde) of at most max bytes. All grammar text is: no control
// character, and nothing on the card that only looks like ASCII.
func printable(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// checker validates a grammar and counts its nodes.
type checker struct{ nodes int }

func (c *Contract) validate() error {
	f := &c.f
	switch {
	case f.Format != Format:
		return fmt.Errorf("format: %d is not %d, the one this broker reads", f.Format, Format)
	case !contractName(f.Name):
		return fmt.Errorf("name: %q is not a lowercase name of letters, digits and \"-\" (at most 64)", f.Name)
	case f.Description != "" && !printable(f.Description, 512):
		return errors.New("description: at most 512 bytes of printable ASCII on one line")
	case len(f.Argv) == 0:
		return errors.New("argv: missing; a contract has at least one element")
	}
	if err := checkExecutable(f.Executable); err != nil {
		return err
	}
	var k checker
	if err := k.seq(f.Argv, 0, "argv"); err != nil {
		return err
	}
	args, size := seqSize(f.Argv)
	if args > wire.MaxArgs {
		return fmt.Errorf("argv: the grammar accepts up to %d arguments; the cap is %d", args, wire.MaxArgs)
	}
	if size > wire.MaxArgvBytes {
		return fmt.Errorf("argv: the grammar accepts up to %d bytes of arguments; the cap is %d", size, wire.MaxArgvBytes)
	}
	return nil
}

func checkExecutable(e string) error {
	if path.IsAbs(e) {
		if !printable(e, maxPathLen) || path.Clean(e) != e {
			return fmt.Errorf("executable: %q is not a clean absolute path of printable ASCII", e)
		}
		return nil
	}
	if !bareName(e) {
		return fmt.Errorf("executable: %q is neither an absolute path nor a bare program name (no \"/\")", e)
	}
	return nil
}

func (k *checker) seq(els []element, depth int, where string) error {
	if len(els) == 0 {
		return fmt.Errorf("%s: an empty sequence", where)
	}
	for i := range els {
		if err := k.elem(&els[i], depth, fmt.Sprintf("%s[%d]", where, i)); err != nil {
			return err
		}
	}
	return nil
}

func (k *checker) elem(e *element, depth int, where string) error {
	if k.nodes++; k.nodes > maxNodes {
		return fmt.Errorf("%s: the grammar has more than %d nodes", where, maxNodes)
	}
	set := 0
	for _, b := range []bool{e.Literal != nil, e.Flags != nil, e.Operand != nil, e.Optional != nil, e.Repeat != nil, e.Choice != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("%s: an element sets exactly one of literal, flags, operand, optional, repeat, choice (this one sets %d)", where, set)
	}
	if (e.Optional != nil || e.Repeat != nil || e.Choice != nil) && depth >= maxGroupDepth {
		return fmt.Errorf("%s: groups nested deeper than %d", where, maxGroupDepth)
	}
	switch {
	case e.Literal != nil:
		if !printable(*e.Literal, maxToken) {
			return fmt.Errorf("%s.literal: %q is not 1 to %d bytes of printable ASCII", where, *e.Literal, maxToken)
		}
	case e.Flags != nil:
		return k.flags(e.Flags, where+".flags")
	case e.Operand != nil:
		if e.Operand.Name == "" {
			return fmt.Errorf("%s.operand: an operand needs a name (the slot its argument is recorded under)", where)
		}
		return k.value(e.Operand, where+".operand")
	case e.Optional != nil:
		if err := k.seq(e.Optional, depth+1, where+".optional"); err != nil {
			return err
		}
		if seqNullable(e.Optional) {
			return fmt.Errorf("%s.optional: its body can match nothing, so it is optional already", where)
		}
	case e.Repeat != nil:
		r := e.Repeat
		switch {
		case r.Min == nil || r.Max == nil:
			return fmt.Errorf("%s.repeat: min and max are both required", where)
		case *r.Max < 1 || *r.Max > maxRepeat || *r.Min < 0 || *r.Min > *r.Max:
			return fmt.Errorf("%s.repeat: min %d and max %d are not 0 <= min <= max, 1 <= max <= %d", where, *r.Min, *r.Max, maxRepeat)
		case len(r.Of) == 0:
			return fmt.Errorf("%s.repeat: of is required", where)
		}
		if err := k.seq(r.Of, depth+1, where+".repeat.of"); err != nil {
			return err
		}
		if seqNullable(r.Of) {
			return fmt.Errorf("%s.repeat.of: its body can match nothing; each repetition must take an argument", where)
		}
	case e.Choice != nil:
		seen := map[string]bool{}
		for i := range e.Choice {
			b := &e.Choice[i]
			w := fmt.Sprintf("%s.choice[%d]", where, i)
			if k.nodes++; !printable(b.Literal, maxToken) || strings.HasPrefix(b.Literal, "-") {
				return fmt.Errorf("%s.literal: %q is not a subcommand: 1 to %d bytes of printable ASCII, not beginning with \"-\"", w, b.Literal, maxToken)
			}
			if seen[b.Literal] {
				return fmt.Errorf("%s.literal: %q is an alternative twice", w, b.Literal)
			}
			seen[b.Literal] = true
			if b.Then != nil {
				if err := k.seq(b.Then, depth+1, w+".then"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (k *checker) flags(fs []*flag, where string) error {
	if len(fs) > maxFlags {
		return fmt.Errorf("%s: more than %d flags", where, maxFlags)
	}
	seen := map[string]bool{}
	for i, f := range fs {
		w := fmt.Sprintf("%s[%d]", where, i)
		k.nodes++
		switch {
		case !flagName(f.Flag):
			return fmt.Errorf("%s.flag: %q is not a flag: \"-\" or \"--\" then letters, digits, \"_\", \".\", \"-\" (no \"=\")", w, f.Flag)
		case seen[f.Flag]:
			return fmt.Errorf("%s.flag: %s is listed twice", w, f.Flag)
		case f.Max < 0 || f.Max > maxFlagUses:
			return fmt.Errorf("%s.max: %d is not 1 to %d", w, f.Max, maxFlagUses)
		}
		seen[f.Flag] = true
		if f.Max == 0 {
			f.Max = 1
		}
		if f.Value == nil {
			if f.Forms != nil {
				return fmt.Errorf("%s.forms: flag %s takes no value, so it has no forms", w, f.Flag)
			}
			continue
		}
		if len(f.Forms) == 0 {
			return fmt.Errorf("%s.forms: flag %s takes a value; list how: %q, %q, %q", w, f.Flag, formSeparate, formEquals, formAttached)
		}
		for _, form := range f.Forms {
			p := map[string]*bool{formSeparate: &f.separate, formEquals: &f.equals, formAttached: &f.attached}[form]
			if p == nil || *p {
				return fmt.Errorf("%s.forms: %q is unknown or given twice (one of %q, %q, %q)", w, form, formSeparate, formEquals, formAttached)
			}
			*p = true
		}
		if f.attached && strings.HasPrefix(f.Flag, "--") {
			return fmt.Errorf("%s.forms: a long flag (%s) takes no attached value", w, f.Flag)
		}
		if err := k.value(f.Value, w+".value"); err != nil {
			return err
		}
	}
	for _, a := range fs {
		for _, b := range fs {
			if a.attached && a != b && strings.HasPrefix(b.Flag, a.Flag) {
				return fmt.Errorf("%s: %s takes an attached value, so %s would be ambiguous", where, a.Flag, b.Flag)
			}
		}
	}
	return nil
}

func (k *checker) value(v *value, where string) error {
	k.nodes++
	if v.Name != "" && !slotName(v.Name) {
		return fmt.Errorf("%s.name: %q is not a lowercase name of letters, digits and \"-\" (at most 32)", where, v.Name)
	}
	fields := []struct {
		name  string
		given bool
		typ   Kind // the one type it applies to
	}{
		{"values", v.Values != nil, KindEnum},
		{"min", v.Min != nil, KindInt},
		{"max", v.Max != nil, KindInt},
		{"pattern", v.Pattern != "", KindString},
		{"max_len", v.MaxLen != 0, KindString},
		{"access", v.Access != "", KindPath},
	}
	if !valueKind(v.Type) {
		return fmt.Errorf("%s.type: %q is not one of enum, int, string, path, go-package, package-script, make-target", where, v.Type)
	}
	for _, fl := range fields {
		applies := fl.typ == v.Type
		if fl.given != applies {
			if applies {
				return fmt.Errorf("%s: type %s requires %s", where, v.Type, fl.name)
			}
			return fmt.Errorf("%s: %s does not apply to type %s", where, fl.name, v.Type)
		}
	}
	switch v.Type {
	case KindEnum:
		if len(v.Values) > maxEnum {
			return fmt.Errorf("%s.values: more than %d", where, maxEnum)
		}
		seen := map[string]bool{}
		for _, s := range v.Values {
			if !printable(s, maxToken) || s[0] == '-' || seen[s] {
				return fmt.Errorf("%s.values: %q is given twice, begins with \"-\" or is not 1 to %d bytes of printable ASCII", where, s, maxToken)
			}
			seen[s] = true
		}
	case KindInt:
		if *v.Min < 0 || *v.Min > *v.Max || *v.Max > 1<<31-1 {
			return fmt.Errorf("%s: min %d and max %d are not 0 <= min <= max <= %d", where, *v.Min, *v.Max, 1<<31-1)
		}
	case KindString:
		if v.MaxLen < 1 || v.MaxLen > maxStringLen {
			return fmt.Errorf("%s.max_len: %d is not 1 to %d", where, v.MaxLen, maxStringLen)
		}
		re, err := compilePattern(v.Pattern)
		if err != nil {
			return fmt.Errorf("%s.pattern: %w", where, err)
		}
		v.re = re
	case KindPath:
		if v.Access != accessRead && v.Access != accessWrite {
			return fmt.Errorf("%s.access: %q is not %q or %q", where, v.Access, accessRead, accessWrite)
		}
	}
	return nil
}

// The access a path value declares.
const (
	accessRead  = "read"
	accessWrite = "write"
)

// maxBytes is the longest argument v accepts.
func (v *value) maxBytes() int {
	switch v.Type {
	case KindEnum:
		n := 0
		for _, s := range v.Values {
			n = max(n, len(s))
		}
		return n
	case KindInt:
		return len(strconv.FormatInt(*v.Max, 10))
	case KindString:
		return v.MaxLen
	case KindPath, KindGoPackage:
		return maxPathLen
	}
	return maxToken
}

// nullable reports whether e can match no argument at all.
func (e *element) nullable() bool {
	switch {
	case e.Flags != nil:
		return true
	case e.Optional != nil:
		return true
	case e.Repeat != nil:
		return *e.Repeat.Min == 0 || seqNullable(e.Repeat.Of)
	}
	return false
}

func seqNullable(els []element) bool {
	for i := range els {
		if !els[i].nullable() {
			return false
		}
	}
	return true
}

// capped keeps the size arithmetic far from overflow.
func capped(n int) int { return min(n, 1<<30) }

// seqSize is the most arguments, and bytes, a sequence can take.
func seqSize(els []element) (args, size int) {
	for i := range els {
		a, s := els[i].size()
		args, size = capped(args+a), capped(size+s)
	}
	return args, size
}

func (e *element) size() (args, size int) {
	switch {
	case e.Literal != nil:
		return 1, len(*e.Literal)
	case e.Operand != nil:
		return 1, e.Operand.maxBytes()
	case e.Flags != nil:
		for _, f := range e.Flags {
			a, s := 1, len(f.Flag)
			if f.Value != nil {
				s += 1 + f.Value.maxBytes()
				if f.separate {
					a = 2
				}
			}
			args, size = capped(args+f.Max*a), capped(size+f.Max*s)
		}
		return args, size
	case e.Optional != nil:
		return seqSize(e.Optional)
	case e.Repeat != nil:
		a, s := seqSize(e.Repeat.Of)
		return capped(a * *e.Repeat.Max), capped(s * *e.Repeat.Max)
	}
	for _, b := range e.Choice {
		a, s := seqSize(b.Then)
		args, size = max(args, 1+a), max(size, len(b.Literal)+s)
	}
	return args, size
}
