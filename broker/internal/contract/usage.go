package contract

import (
	"fmt"
	"strings"
)

// describe says in words what v accepts.
func (v *value) describe() string {
	switch v.Type {
	case KindEnum:
		return "one of " + strings.Join(v.Values, ", ")
	case KindInt:
		return fmt.Sprintf("an integer from %d to %d", *v.Min, *v.Max)
	case KindString:
		return fmt.Sprintf("a string matching %s, at most %d bytes", v.Pattern, v.MaxLen)
	case KindPath:
		if v.Access == accessWrite {
			return "a path to write inside the workspace (a file, new or existing)"
		}
		return "a path to read inside the workspace (a file or directory)"
	case KindGoPackage:
		return "a Go package inside the workspace (., ./..., ./DIR or ./DIR/...)"
	case KindPackageScript:
		return "a script named in package.json"
	case KindMakeTarget:
		return "a target declared in the makefile"
	}
	panic("contract: internal error: value type " + string(v.Type))
}

// forms lists how a valued flag may be spelt, its value shown as v.
func (f *flag) forms(v, sep string) string {
	var s []string
	if f.separate {
		s = append(s, f.Flag+" "+v)
	}
	if f.equals {
		s = append(s, f.Flag+"="+v)
	}
	if f.attached {
		s = append(s, f.Flag+v)
	}
	return strings.Join(s, sep)
}

// Usage is the whole grammar as a person reads it on the approval card,
// within 80 columns: one synopsis per alternative of the first choice
// (or one), then one line per distinct value slot saying what it
// accepts. It shows everything Canonical holds but the description.
func (c *Contract) Usage() string {
	u := &usage{where: map[string]bool{}, sets: map[string]bool{}}
	var out []string
	for _, l := range append(u.synopsis(c.f.Executable, c.f.Argv), u.notes...) {
		out = append(out, wrap(l, 80)...)
	}
	return strings.Join(out, "\n")
}

type usage struct {
	notes []string
	where map[string]bool
	sets  map[string]bool // flag sets shown already
}

// wrap breaks a line at spaces into lines of at most width bytes (a
// longer word stays whole), continued four spaces further in.
func wrap(line string, width int) []string {
	indent := strings.Repeat(" ", len(line)-len(strings.TrimLeft(line, " "))+4)
	var out []string
	cur := ""
	for _, w := range strings.Fields(line) {
		switch {
		case cur == "":
			cur = line[:len(line)-len(strings.TrimLeft(line, " "))] + w
		case len(cur)+1+len(w) > width:
			out = append(out, cur)
			cur = indent + w
		default:
			cur += " " + w
		}
	}
	return append(out, cur)
}

// synopsis expands the first top-level choice into a line per branch.
func (u *usage) synopsis(prefix string, els []element) []string {
	for i := range els {
		if els[i].Choice == nil {
			continue
		}
		head := strings.TrimSpace(prefix + " " + u.seq(els[:i]))
		tail := u.seq(els[i+1:])
		var lines []string
		for _, b := range els[i].Choice {
			lines = append(lines, strings.Join(strings.Fields(head+" "+b.Literal+" "+u.seq(b.Then)+" "+tail), " "))
		}
		return lines
	}
	return []string{strings.TrimSpace(prefix + " " + u.seq(els))}
}

func (u *usage) seq(els []element) string {
	var parts []string
	for i := range els {
		parts = append(parts, u.elem(&els[i]))
	}
	return strings.Join(parts, " ")
}

func (u *usage) elem(e *element) string {
	switch {
	case e.Literal != nil:
		return quote(*e.Literal)
	case e.Operand != nil:
		return u.slot(e.Operand.Name, e.Operand)
	case e.Flags != nil:
		key := fmt.Sprint(flagKey(e.Flags))
		if u.sets[key] {
			return "[flags as above]"
		}
		u.sets[key] = true
		var parts []string
		for _, f := range e.Flags {
			s := f.Flag
			if f.Value != nil {
				s = f.forms(u.slot(f.Value.Name, f.Value), "|")
			}
			s = "[" + s + "]"
			if f.Max > 1 {
				s += fmt.Sprintf("{0,%d}", f.Max)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " ")
	case e.Optional != nil:
		return "[" + u.seq(e.Optional) + "]"
	case e.Repeat != nil:
		return fmt.Sprintf("(%s){%d,%d}", u.seq(e.Repeat.Of), *e.Repeat.Min, *e.Repeat.Max)
	}
	var alts []string
	for _, b := range e.Choice {
		alts = append(alts, strings.TrimSpace(quote(b.Literal)+" "+u.seq(b.Then)))
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

// slot names a value <name> (its type when unnamed) and notes once what
// it accepts.
func (u *usage) slot(name string, v *value) string {
	if name == "" {
		name = string(v.Type)
	}
	note := fmt.Sprintf("  <%s>: %s", name, v.describe())
	if !u.where[note] {
		u.where[note] = true
		u.notes = append(u.notes, note)
	}
	return "<" + name + ">"
}

// quote shows a literal as typed, quoted when it holds a space or quote.
func quote(s string) string {
	if strings.ContainsAny(s, ` "'`) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// flagKey is what a flag set shows, to recognise it when repeated.
func flagKey(fs []*flag) []string {
	var k []string
	for _, f := range fs {
		s := fmt.Sprintf("%s %d", f.Flag, f.Max)
		if f.Value != nil {
			s += " " + f.forms(f.Value.Name+" "+f.Value.describe(), "|")
		}
		k = append(k, s)
	}
	return k
}
