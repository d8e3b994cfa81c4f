package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"unicode/utf8"
)

// Format is the one version of the file format this package reads.
const Format = 1

// Bounds of a contract file and its grammar.
const (
	MaxFileBytes  = 64 << 10 // one contract file
	maxJSONDepth  = 32       // nested objects and lists
	maxNodes      = 256      // elements, flags and values together
	maxGroupDepth = 8        // optional, repeat and choice inside each other
	maxFlags      = 64       // flags in one set
	maxFlagUses   = 16       // times one flag may be given
	maxEnum       = 64       // values of one enum
	maxToken      = 256      // a literal, an enum value, a script or target name
	maxFlagName   = 64
	maxPattern    = 512
	maxStringLen  = 1024 // a string value's max_len
	maxPathLen    = 1024 // a path operand
	maxRepeat     = 256  // a repetition's max (wire.MaxArgs)
	maxSteps      = 1 << 16
)

// Contract is a parsed and validated contract. Only Decode and Builtin
// make one, and nothing changes it afterwards.
type Contract struct {
	f         file
	canonical []byte
	digest    string
}

// file is the JSON document (docs/contracts.md). The grammar types have
// exported fields for encoding/json only; they never leave the package.
type file struct {
	Format      int       `json:"format"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Executable  string    `json:"executable"`
	Argv        []element `json:"argv"`
}

// element is one grammar element: exactly one field is set.
type element struct {
	Literal  *string   `json:"literal,omitempty"`
	Flags    []*flag   `json:"flags,omitempty"`
	Operand  *value    `json:"operand,omitempty"`
	Optional []element `json:"optional,omitempty"`
	Repeat   *repeat   `json:"repeat,omitempty"`
	Choice   []branch  `json:"choice,omitempty"`
}

type repeat struct {
	Min *int      `json:"min"`
	Max *int      `json:"max"`
	Of  []element `json:"of"`
}

// branch is one alternative of a choice: a literal subcommand and what
// may follow it.
type branch struct {
	Literal string    `json:"literal"`
	Then    []element `json:"then,omitempty"`
}

type flag struct {
	Flag  string   `json:"flag"`
	Value *value   `json:"value,omitempty"`
	Forms []string `json:"forms,omitempty"`
	Max   int      `json:"max,omitempty"` // times it may be given; 1 when absent

	separate, equals, attached bool
}

// The spellings of a flag's value.
const (
	formSeparate = "separate" // -f V
	formEquals   = "equals"   // -f=V
	formAttached = "attached" // -fV
)

type value struct {
	Name    string   `json:"name,omitempty"`
	Type    Kind     `json:"type"`
	Values  []string `json:"values,omitempty"`  // enum
	Min     *int64   `json:"min,omitempty"`     // int
	Max     *int64   `json:"max,omitempty"`     // int
	Pattern string   `json:"pattern,omitempty"` // string
	MaxLen  int      `json:"max_len,omitempty"` // string
	Access  string   `json:"access,omitempty"`  // path: read or write

	re *regexp.Regexp
}

// Kind is what took one argument: a literal, a flag, or a value of one
// of the closed set of value types.
type Kind string

// The kinds. Those after KindFlag are the value types of the format.
const (
	KindLiteral       Kind = "literal"
	KindFlag          Kind = "flag"
	KindEnum          Kind = "enum"
	KindInt           Kind = "int"
	KindString        Kind = "string"
	KindPath          Kind = "path"
	KindGoPackage     Kind = "go-package"
	KindPackageScript Kind = "package-script"
	KindMakeTarget    Kind = "make-target"
)

func (k Kind) String() string { return string(k) }

// valueKind reports whether k is one of the value types.
func valueKind(k Kind) bool {
	switch k {
	case KindEnum, KindInt, KindString, KindPath, KindGoPackage, KindPackageScript, KindMakeTarget:
		return true
	}
	return false
}

// Name is the contract's name, such as "go-test".
func (c *Contract) Name() string { return c.f.Name }

// Description is the contract's one-line description, or "".
func (c *Contract) Description() string { return c.f.Description }

// Executable is the program as the file names it: an absolute path, or
// a bare name that the broker resolves on its sanitized PATH when the
// contract is enabled (the Grant then binds what it found).
func (c *Contract) Executable() string { return c.f.Executable }

// Canonical is the contract's canonical form (docs/contracts.md): the
// JSON re-encoded from the parsed file with absent fields left out,
// defaults written out, keys sorted and no insignificant space.
func (c *Contract) Canonical() []byte { return bytes.Clone(c.canonical) }

// Digest is the hex SHA-256 of Canonical: what a human approved.
func (c *Contract) Digest() string { return c.digest }

// Decode parses one contract file strictly: at most MaxFileBytes of valid
// UTF-8 holding exactly one JSON object, with no unknown, misspelt or
// duplicate key, no null and no empty list, then validates its grammar
// (validate.go). On error it returns no contract.
func Decode(data []byte) (*Contract, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("contract: %d bytes exceeds the cap of %d", len(data), MaxFileBytes)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("contract: not valid UTF-8")
	}
	if err := scan(data); err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	c := &Contract{f: f}
	if err := c.validate(); err != nil {
		if f.Name != "" && len(f.Name) <= maxFlagName && utf8.ValidString(f.Name) {
			return nil, fmt.Errorf("contract %q: %w", f.Name, err)
		}
		return nil, fmt.Errorf("contract: %w", err)
	}
	var err error
	if c.canonical, err = canonical(&c.f); err != nil {
		return nil, fmt.Errorf("contract %q: %w", f.Name, err)
	}
	sum := sha256.Sum256(c.canonical)
	c.digest = hex.EncodeToString(sum[:])
	return c, nil
}

// knownKeys are every key the format has, spelt exactly: encoding/json
// matches keys without regard to case, so scan refuses any other
// spelling before it does.
var knownKeys = map[string]bool{
	"format": true, "name": true, "description": true, "executable": true, "argv": true,
	"literal": true, "flags": true, "operand": true, "optional": true, "repeat": true, "choice": true,
	"then": true, "min": true, "max": true, "of": true, "flag": true, "value": true, "forms": true,
	"type": true, "values": true, "pattern": true, "max_len": true, "access": true,
}

// scan walks the JSON tokens: one top-level object, nothing after it,
// every key known and none twice in an object, no null, no empty list,
// nesting within maxJSONDepth.
func scan(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object, wantKey, empty bool
		seen                   map[string]bool
	}
	var stack []*frame
	done := false
	valueEnds := func() {
		if n := len(stack); n > 0 {
			stack[n-1].empty = false
			if stack[n-1].object {
				stack[n-1].wantKey = true
			}
		} else {
			done = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if !done {
				return errors.New("no JSON object")
			}
			return nil
		}
		if err != nil {
			return err
		}
		if done {
			return errors.New("data after the JSON object")
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueEnds()
				continue
			}
			k, _ := tok.(string)
			if !knownKeys[k] {
				return fmt.Errorf("unknown field %q", k)
			}
			if stack[n-1].seen[k] {
				return fmt.Errorf("field %q given twice in one object", k)
			}
			stack[n-1].seen[k] = true
			stack[n-1].wantKey = false
			continue
		}
		if len(stack) == 0 && tok != json.Delim('{') {
			return errors.New("a contract is a JSON object")
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxJSONDepth {
				return fmt.Errorf("nested deeper than %d", maxJSONDepth)
			}
			obj := tok == json.Delim('{')
			stack = append(stack, &frame{object: obj, wantKey: obj, empty: true, seen: map[string]bool{}})
		case json.Delim(']'):
			if stack[len(stack)-1].empty {
				return errors.New("an empty list; leave the field out instead")
			}
			stack = stack[:len(stack)-1]
			valueEnds()
		case nil:
			return errors.New("null is not a value in a contract; leave the field out instead")
		default:
			valueEnds()
		}
	}
}

// canonical re-encodes f with defaults written out, then once more
// through a generic value so that every object's keys are sorted.
func canonical(f *file) ([]byte, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode canonical form: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("encode canonical form: %w", err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode canonical form: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}
