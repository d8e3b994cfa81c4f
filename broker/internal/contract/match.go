package contract

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"warrant/wire"
)

// Parse is how a contract accepted one argv: which slot took each
// argument, in order. It goes into the receipt beside the concrete argv.
type Parse struct {
	Contract string `json:"contract" cbor:"contract"` // the contract's name
	Digest   string `json:"digest" cbor:"digest"`     // its Digest
	Args     []Arg  `json:"args" cbor:"args"`         // one per argument, in argv order
}

// Arg is one argument and the slot that took it.
type Arg struct {
	Index int    `json:"index" cbor:"index"` // into the argv given to Match (argv[0] excluded)
	Arg   string `json:"arg" cbor:"arg"`     // the argument as given
	// Slot is the literal for KindLiteral, the flag (as listed) for a
	// flag and its value, and the operand's name for an operand.
	Slot string `json:"slot" cbor:"slot"`
	// Kind is KindLiteral, KindFlag (a flag alone, or a flag whose value
	// is the next argument), or the value type of what the argument
	// holds (an operand, a flag's value, or a flag with its value joined).
	Kind Kind `json:"kind" cbor:"kind"`
	// Value is the value's part of an argument that joins it to its flag
	// (-f=V, -fV); absent when the whole argument is the value.
	Value string `json:"value,omitempty" cbor:"value,omitempty"`
	// Path is a path's, or a Go package's directory's, resolved form
	// relative to the directory given to Match.
	Path string `json:"path,omitempty" cbor:"path,omitempty"`

	val *value // the slot's type, for re-checking in tests
}

// MatchError says which argument a contract did not accept and why.
type MatchError struct {
	Contract string
	// Index is the argument refused, into argv; len(argv) when the
	// arguments ended where the grammar wanted more; -1 when argv as a
	// whole is (too long).
	Index  int
	Arg    string // the argument refused, when there is one
	Reason string
	end    bool
}

func (e *MatchError) Error() string {
	switch {
	case e.Index < 0:
		return fmt.Sprintf("contract %s does not accept these arguments: %s", e.Contract, e.Reason)
	case e.end:
		return fmt.Sprintf("contract %s does not accept these arguments: they end where it expects %s", e.Contract, e.Reason)
	}
	return fmt.Sprintf("contract %s does not accept argument %d %q: %s", e.Contract, e.Index+1, e.Arg, e.Reason)
}

// matcher is one Match: a deterministic, greedy walk of the grammar (a
// parsing expression grammar: a group takes what it can or nothing, and
// what it took is never given back), within maxSteps.
type matcher struct {
	argv             []string
	dir              *os.File
	protected        func(string) bool
	out              []Arg
	steps            int
	fail             *MatchError
	failRank         int // see refuse
	soft             int // > 0 inside an attempt the grammar may skip
	seen             map[string]lookedUp
	scripts, targets names
}

// Match decides whether the contract accepts argv, the arguments after
// argv[0] (as wire.ActionRequest.Argv and wire.CommandIdentity.Argv hold
// them). dir is the directory the command will run in (the action's
// cwd, opened beneath the workspace): every path, Go package, package.json
// and makefile is resolved beneath it by descriptor. protected is asked
// about every path argument and each directory above it, relative to dir
// ("." is dir itself); true refuses the argument. The result is the parse,
// or a *MatchError naming the argument refused (the furthest the grammar
// reached) and why.
func (c *Contract) Match(argv []string, dir *os.File, protected func(string) bool) (*Parse, error) {
	if dir == nil || protected == nil {
		return nil, errors.New("contract: match without a directory or a protected predicate")
	}
	refuse := func(reason string) (*Parse, error) {
		return nil, &MatchError{Contract: c.f.Name, Index: -1, Reason: reason}
	}
	total := 0
	for _, a := range argv {
		total += len(a)
	}
	if len(argv) > wire.MaxArgs || total > wire.MaxArgvBytes {
		return refuse(fmt.Sprintf("%d arguments of %d bytes exceed the caps (%d arguments, %d bytes)", len(argv), total, wire.MaxArgs, wire.MaxArgvBytes))
	}
	m := &matcher{argv: argv, dir: dir, protected: protected, seen: map[string]lookedUp{}}
	end, ok := m.seq(c.f.Argv, 0)
	if m.steps > maxSteps {
		return refuse(fmt.Sprintf("matching took more than %d steps", maxSteps))
	}
	if ok && end == len(argv) {
		return &Parse{Contract: c.f.Name, Digest: c.digest, Args: append([]Arg{}, m.out...)}, nil
	}
	if ok {
		m.soft++
		m.record(end, 0, "nothing in the contract takes it here")
	}
	if m.fail == nil {
		panic("contract: internal error: a refusal without a reason")
	}
	m.fail.Contract = c.f.Name
	return nil, m.fail
}

// refuse records why argument i was not taken. The furthest argument
// refused is reported; at the same argument the highest rank, then the
// first. A refusal the grammar could not do without (a required element,
// or a flag set's, which knows best why an argument beginning with "-"
// is not one of its flags) ranks over one it could (inside an optional
// group or a repetition past its min); then a reason (a value's type
// said why not) over a bare expectation (expect).
func (m *matcher) refuse(i int, format string, a ...any) { m.record(i, 1, fmt.Sprintf(format, a...)) }

func (m *matcher) record(i, rank int, reason string) {
	if m.soft == 0 {
		rank += 2
	}
	if m.fail != nil && (m.fail.Index > i || m.fail.Index == i && m.failRank >= rank) {
		return
	}
	m.failRank = rank
	m.fail = &MatchError{Index: i, Reason: reason, end: i == len(m.argv)}
	if i < len(m.argv) {
		m.fail.Arg = m.argv[i]
	}
}

// expect records that argument i is not want: at the end of the
// arguments the reason is what was wanted, elsewhere "expected want".
func (m *matcher) expect(i int, want string) {
	if i == len(m.argv) {
		m.record(i, 0, want)
	} else {
		m.record(i, 0, "expected "+want)
	}
}

func (m *matcher) add(i int, slot string, kind Kind, value, rel string, v *value) {
	m.out = append(m.out, Arg{Index: i, Arg: m.argv[i], Slot: slot, Kind: kind, Value: value, Path: rel, val: v})
}

// seq matches the elements in turn from argument i.
func (m *matcher) seq(els []element, i int) (int, bool) {
	for k := range els {
		var ok bool
		if i, ok = m.elem(&els[k], i); !ok {
			return i, false
		}
	}
	return i, true
}

func (m *matcher) elem(e *element, i int) (int, bool) {
	if m.steps++; m.steps > maxSteps {
		return i, false
	}
	mark := len(m.out)
	switch {
	case e.Literal != nil:
		if i < len(m.argv) && m.argv[i] == *e.Literal {
			m.add(i, *e.Literal, KindLiteral, "", "", nil)
			return i + 1, true
		}
		m.expect(i, strconv.Quote(*e.Literal))
	case e.Operand != nil:
		v := e.Operand
		if i == len(m.argv) {
			m.expect(i, "<"+v.Name+">, "+v.describe())
			return i, false
		}
		rel, why := m.check(v, m.argv[i])
		if why == "" {
			m.add(i, v.Name, v.Type, "", rel, v)
			return i + 1, true
		}
		m.refuse(i, "<%s>: %s", v.Name, why)
	case e.Flags != nil:
		return m.flags(e.Flags, i), true
	case e.Optional != nil:
		m.soft++
		j, ok := m.seq(e.Optional, i)
		m.soft--
		if ok {
			return j, true
		}
		m.out = m.out[:mark]
		return i, true
	case e.Repeat != nil:
		j, n := i, 0
		for ; n < *e.Repeat.Max; n++ {
			mk := len(m.out)
			if n == *e.Repeat.Min {
				m.soft++
				defer func() { m.soft-- }()
			}
			k, ok := m.seq(e.Repeat.Of, j)
			if !ok || k == j {
				m.out = m.out[:mk]
				break
			}
			j = k
		}
		if n >= *e.Repeat.Min {
			return j, true
		}
		m.expect(j, fmt.Sprintf("%d more of a part repeated at least %d times", *e.Repeat.Min-n, *e.Repeat.Min))
	case e.Choice != nil:
		var alts []string
		for _, b := range e.Choice {
			if i < len(m.argv) && m.argv[i] == b.Literal {
				m.add(i, b.Literal, KindLiteral, "", "", nil)
				if j, ok := m.seq(b.Then, i+1); ok {
					return j, true
				}
				m.out = m.out[:mark]
				return i, false
			}
			alts = append(alts, b.Literal)
		}
		m.expect(i, "one of "+strings.Join(alts, ", "))
	default:
		panic("contract: internal error: an element with nothing set")
	}
	m.out = m.out[:mark]
	return i, false
}

// flags takes arguments while each is a flag of the set, spelt as the
// flag declares, given no more often than its max, with a value its type
// accepts. It stops at the first argument that is not one (recording why
// when it begins with "-") and never fails: the set may be empty.
func (m *matcher) flags(fs []*flag, i int) int {
	used := make([]int, len(fs))
	for i < len(m.argv) {
		a := m.argv[i]
		if m.steps++; m.steps > maxSteps || len(a) < 2 || a[0] != '-' {
			return i
		}
		k, val, joined, why := lookupFlag(fs, a)
		if why != "" {
			m.refuse(i, "%s", why)
			return i
		}
		f := fs[k]
		if used[k] == f.Max {
			m.refuse(i, "flag %s may be given at most %d time(s)", f.Flag, f.Max)
			return i
		}
		switch {
		case f.Value == nil:
			m.add(i, f.Flag, KindFlag, "", "", nil)
		case joined:
			rel, why := m.check(f.Value, val)
			if why != "" {
				m.refuse(i, "the value of %s: %s", f.Flag, why)
				return i
			}
			m.add(i, f.Flag, f.Value.Type, val, rel, f.Value)
		default:
			if i+1 == len(m.argv) {
				m.expect(i+1, "a value for "+f.Flag+": "+f.Value.describe())
				return i
			}
			rel, why := m.check(f.Value, m.argv[i+1])
			if why != "" {
				m.refuse(i+1, "the value of %s: %s", f.Flag, why)
				return i
			}
			m.add(i, f.Flag, KindFlag, "", "", nil)
			i++
			m.add(i, f.Flag, f.Value.Type, "", rel, f.Value)
		}
		used[k]++
		i++
	}
	return i
}

// lookupFlag finds the flag argument a spells: the flag itself (alone,
// or with its value in the next argument), "flag=V", or "flagV" for a
// flag declaring that form; validation made the three unambiguous.
func lookupFlag(fs []*flag, a string) (k int, val string, joined bool, why string) {
	name, v, eq := strings.Cut(a, "=")
	for k, f := range fs {
		switch {
		case f.Flag == a && (f.Value == nil || f.separate):
			return k, "", false, ""
		case f.Flag == a:
			return k, "", false, fmt.Sprintf("flag %s takes its value joined to it (%s)", a, f.forms("V", ", "))
		case eq && f.Flag == name && f.Value != nil && f.equals:
			return k, v, true, ""
		case eq && f.Flag == name:
			return k, "", false, fmt.Sprintf("flag %s does not take a value after \"=\" (%s)", name, f.forms("V", ", "))
		}
	}
	for k, f := range fs {
		if f.attached && strings.HasPrefix(a, f.Flag) {
			return k, a[len(f.Flag):], true, ""
		}
	}
	return 0, "", false, fmt.Sprintf("flag %s is not one this contract accepts here", name)
}
