package contract

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// compilePattern checks a string value's pattern and compiles it. The
// pattern is Go's RE2 syntax (linear time, no backreferences), written
// anchored (^ first, an unescaped $ last) and matched against the whole
// argument regardless. It must not be free-form: no ".", no class or
// literal reaching outside printable ASCII (which refuses [^x], \S, \W,
// \D, \s, \pL and the like), no case folding, no unbounded repetition
// (*, + or {n,}: write {m,n}) and no multi-line anchors.
func compilePattern(p string) (*regexp.Regexp, error) {
	if len(p) > maxPattern {
		return nil, fmt.Errorf("longer than %d bytes", maxPattern)
	}
	trailing := len(p) - len(strings.TrimRight(strings.TrimSuffix(p, "$"), `\`)) - 1
	if !strings.HasPrefix(p, "^") || !strings.HasSuffix(p, "$") || trailing%2 != 0 {
		return nil, fmt.Errorf("%q is not anchored: write it as ^...$", p)
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", p, err)
	}
	if err := closed(re); err != nil {
		return nil, fmt.Errorf("%q would match free-form text: %w", p, err)
	}
	return regexp.Compile(`^(?:` + p + `)$`)
}

func closed(re *syntax.Regexp) error {
	if re.Flags&syntax.FoldCase != 0 {
		return errors.New("case folding ((?i)) reaches characters outside printable ASCII")
	}
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return errors.New(`"." matches any character; list the characters in a class`)
	case syntax.OpStar, syntax.OpPlus:
		return fmt.Errorf("%s repeats without bound; write {m,n}", re)
	case syntax.OpRepeat:
		if re.Max < 0 {
			return fmt.Errorf("%s repeats without bound; write {m,n}", re)
		}
	case syntax.OpBeginLine, syntax.OpEndLine:
		return errors.New("multi-line anchors ((?m)) are not allowed")
	case syntax.OpCharClass:
		for i := 0; i < len(re.Rune); i += 2 {
			if re.Rune[i] < 0x20 || re.Rune[i+1] > 0x7e {
				return fmt.Errorf("the class %s reaches outside printable ASCII", re)
			}
		}
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r < 0x20 || r > 0x7e {
				return fmt.Errorf("the literal %q is outside printable ASCII", string(re.Rune))
			}
		}
	}
	for _, sub := range re.Sub {
		if err := closed(sub); err != nil {
			return err
		}
	}
	return nil
}
