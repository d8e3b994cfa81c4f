package contract

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// FuzzContract decodes arbitrary bytes; a contract that decodes must
// re-decode from its canonical form to the same digest, and must match
// arbitrary argv (NUL-separated) without panicking, refusing with a
// *MatchError and no parse, or accepting only with every argument
// accounted for by exactly one slot whose type still accepts it.
func FuzzContract(f *testing.F) {
	for _, name := range Library() {
		b, err := library.ReadFile("library/" + name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "test\x00-run\x00TestX\x00./pkg")
	}
	f.Add([]byte(grammar(`{"flags": [{"flag": "-n", "value": {"type": "int", "min": 1, "max": 9}, "forms": ["separate", "attached", "equals"]}]}, {"repeat": {"min": 0, "max": 3, "of": [{"operand": {"name": "p", "type": "path", "access": "write"}}]}}`)), "-n3\x00a.txt\x00new")
	dir, _ := tree(f, map[string]string{
		"a.txt": "", "pkg/x.go": "", "pkg/sub/": "", "link": "->pkg", ".git/config": "",
		"package.json": `{"scripts": {"build": "x", "test": "y"}}`, "Makefile": "build:\ntest: build\n",
	})
	f.Fuzz(func(t *testing.T, data []byte, joined string) {
		c, err := Decode(data)
		if err != nil {
			if c != nil {
				t.Fatal("an error and a contract")
			}
			return
		}
		again, err := Decode(c.Canonical())
		if err != nil || again.Digest() != c.Digest() {
			t.Fatalf("canonical form %s does not decode to the same digest: %v", c.Canonical(), err)
		}
		var argv []string
		if joined != "" {
			argv = strings.Split(joined, "\x00")
		}
		p, err := c.Match(argv, dir, gitProtected)
		if err != nil {
			var me *MatchError
			if p != nil || !errors.As(err, &me) {
				t.Fatalf("refused with %T and parse %v", err, p)
			}
			return
		}
		if err := accountedFor(c, argv, p, dir, gitProtected); err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
	})
}

// accountedFor re-checks an accepted argv against its parse: one entry
// per argument in order, each literal and flag one the grammar has, a
// flag's separate value right after it, and every value accepted again
// by its slot's type with the same resolved path.
func accountedFor(c *Contract, argv []string, p *Parse, dir *os.File, protected func(string) bool) error {
	if p == nil || p.Contract != c.Name() || p.Digest != c.Digest() || len(p.Args) != len(argv) {
		return fmt.Errorf("parse %+v does not cover argv %q of %s", p, argv, c.Name())
	}
	literals, flags := map[string]bool{}, map[string][]*flag{}
	var walk func([]element)
	walk = func(els []element) {
		for _, e := range els {
			switch {
			case e.Literal != nil:
				literals[*e.Literal] = true
			case e.Flags != nil:
				for _, f := range e.Flags {
					flags[f.Flag] = append(flags[f.Flag], f)
				}
			case e.Optional != nil:
				walk(e.Optional)
			case e.Repeat != nil:
				walk(e.Repeat.Of)
			case e.Choice != nil:
				for _, b := range e.Choice {
					literals[b.Literal] = true
					walk(b.Then)
				}
			}
		}
	}
	walk(c.f.Argv)
	m := &matcher{dir: dir, protected: protected, seen: map[string]lookedUp{}}
	for i, a := range p.Args {
		if a.Index != i || a.Arg != argv[i] {
			return fmt.Errorf("entry %d is %+v for argument %q", i, a, argv[i])
		}
		switch {
		case a.Kind == KindLiteral:
			if a.Slot != a.Arg || !literals[a.Arg] {
				return fmt.Errorf("entry %d: literal %q is not in the grammar", i, a.Arg)
			}
		case a.Kind == KindFlag:
			fs := flags[a.Slot]
			if len(fs) == 0 || a.Arg != a.Slot {
				return fmt.Errorf("entry %d: flag %q is not in the grammar", i, a.Arg)
			}
			if a.val != nil || a.Value != "" || a.Path != "" {
				return fmt.Errorf("entry %d: a flag entry with a value", i)
			}
		case valueKind(a.Kind):
			if a.val == nil || a.val.Type != a.Kind {
				return fmt.Errorf("entry %d: kind %s without its slot", i, a.Kind)
			}
			v := a.Arg
			own := slices.IndexFunc(flags[a.Slot], func(f *flag) bool { return f.Value == a.val })
			switch {
			case a.Value != "":
				f := flags[a.Slot][own]
				if own < 0 || !(f.equals && a.Arg == f.Flag+"="+a.Value) && !(f.attached && a.Arg == f.Flag+a.Value) {
					return fmt.Errorf("entry %d: %q is not a spelling of %s with value %q", i, a.Arg, a.Slot, a.Value)
				}
				v = a.Value
			case own >= 0:
				if i == 0 || p.Args[i-1].Kind != KindFlag || p.Args[i-1].Slot != a.Slot || !flags[a.Slot][own].separate {
					return fmt.Errorf("entry %d: a value of %s not right after it", i, a.Slot)
				}
			}
			rel, why := m.check(a.val, v)
			if why != "" || rel != a.Path {
				return fmt.Errorf("entry %d: %q no longer accepted as %s (%s) or resolves to %q, not %q", i, v, a.Kind, why, rel, a.Path)
			}
		default:
			return fmt.Errorf("entry %d: kind %q", i, a.Kind)
		}
	}
	return nil
}
