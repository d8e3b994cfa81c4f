package goals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"warrant/wire"
)

// Bounds of a goal document. With the document's own cap
// (wire.MaxGoalJSON) they keep a goal's view, the document with a
// verdict, under wire.MaxGoalView (TestViewBound).
const (
	MaxSteps    = 64   // steps of one goal
	MaxCriteria = 16   // criteria of one step
	MaxDeps     = 64   // dependencies of one step
	MaxOutputs  = 16   // declared outputs of one step (receipt.MaxArtefacts bounds a receipt's)
	maxID       = 64   // bytes of a step id
	maxPath     = 256  // bytes of a criterion's or an output's path
	maxText     = 1024 // bytes of a title, a prompt, a contained text
)

// The closed set of criterion kinds.
const (
	KindReceipt  = "receipt"
	KindFile     = "file"
	KindArtefact = "artefact"
	KindOperator = "operator"
)

// Spec is a goal document (docs/goals.md): what the goal is, the
// workspace its files are read back beneath, and its steps.
type Spec struct {
	Title     string `json:"title"`
	Workspace string `json:"workspace"` // absolute, clean
	Steps     []Step `json:"steps"`
}

// Step is one step: its id, the steps it depends on, the outputs its
// actions declare (read back and digested into their receipts), and its
// mandatory criteria, every one of which must be met.
type Step struct {
	ID        string      `json:"id"`
	DependsOn []string    `json:"depends_on,omitempty"`
	Outputs   []string    `json:"outputs,omitempty"`
	Criteria  []Criterion `json:"criteria"`
}

// Command is the identity a receipt criterion asks for: the executable as
// requested or as resolved (absolute), argv after argv[0], and the cwd
// relative to the workspace ("." by default).
type Command struct {
	Executable string   `json:"executable"`
	Argv       []string `json:"argv"`
	Cwd        string   `json:"cwd,omitempty"`
}

// Criterion is one mandatory criterion of the closed set; only the
// members of its kind may be set.
//
//   - receipt: Command or Fingerprint (hex), and ExitCode (default 0);
//   - file: Path, and any of SHA256, Contains, JSONPointer with Equals;
//   - artefact: Path (one of the step's outputs), and optionally SHA256;
//   - operator: Prompt, what the operator is asked to state.
type Criterion struct {
	Kind        string          `json:"kind"`
	Command     *Command        `json:"command,omitempty"`
	Fingerprint string          `json:"fingerprint,omitempty"`
	ExitCode    *int32          `json:"exit_code,omitempty"`
	Path        string          `json:"path,omitempty"`
	SHA256      string          `json:"sha256,omitempty"`
	Contains    *string         `json:"contains,omitempty"`
	JSONPointer *string         `json:"json_pointer,omitempty"`
	Equals      json.RawMessage `json:"equals,omitempty"`
	Prompt      string          `json:"prompt,omitempty"`
}

// Decode strictly decodes and validates a goal document: unknown members,
// trailing data, a criterion kind outside the closed set, members of
// another kind, unclean paths and an invalid step graph are refused with
// ARGUMENTS_INVALID. title, when not empty, fills in a missing title.
func Decode(doc, title string) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the goal document is not valid: %v", err)
	}
	if dec.More() {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the goal document has data after its end")
	}
	if s.Title == "" {
		s.Title = title
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Encode returns the document's canonical JSON, which the journal stores
// and whose SHA-256 (Digest) verdicts name.
func (s *Spec) Encode() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic("goals: internal error: encode goal document: " + err.Error())
	}
	return b
}

// Digest is the SHA-256 of the canonical document, in hex.
func Digest(doc []byte) string {
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// Validate checks the document and its step graph (dag.go).
func (s *Spec) Validate() error {
	switch {
	case len(s.Title) > maxText:
		return invalid("the title is over %d bytes", maxText)
	case s.Workspace == "" || !path.IsAbs(s.Workspace) || path.Clean(s.Workspace) != s.Workspace:
		return invalid("workspace %q is not a clean absolute path", s.Workspace)
	case len(s.Steps) == 0:
		return invalid("a goal needs at least one step; a step needs at least one criterion")
	case len(s.Steps) > MaxSteps:
		return invalid("%d steps; the cap is %d", len(s.Steps), MaxSteps)
	}
	for i := range s.Steps {
		if err := s.Steps[i].validate(); err != nil {
			return err
		}
	}
	return checkGraph(s.Steps)
}

func (st *Step) validate() error {
	switch {
	case st.ID == "" || len(st.ID) > maxID || strings.ContainsAny(st.ID, "\x00\n") || !utf8.ValidString(st.ID):
		return invalid("step id %q must be 1 to %d bytes of text", st.ID, maxID)
	case len(st.Criteria) == 0:
		return invalid("step %s has no criteria; every step needs at least one", st.ID)
	case len(st.Criteria) > MaxCriteria:
		return invalid("step %s has %d criteria; the cap is %d", st.ID, len(st.Criteria), MaxCriteria)
	case len(st.DependsOn) > MaxDeps:
		return invalid("step %s has %d dependencies; the cap is %d", st.ID, len(st.DependsOn), MaxDeps)
	case len(st.Outputs) > MaxOutputs:
		return invalid("step %s declares %d outputs; the cap is %d", st.ID, len(st.Outputs), MaxOutputs)
	}
	for _, o := range st.Outputs {
		if err := relPath(o); err != nil {
			return invalid("step %s: output %v", st.ID, err)
		}
	}
	for i := range st.Criteria {
		if err := st.Criteria[i].validate(st); err != nil {
			return invalid("step %s: criteria[%d] (%s): %v", st.ID, i, st.Criteria[i].Kind, err)
		}
	}
	return nil
}

func (c *Criterion) validate(st *Step) error {
	receiptSet := c.Command != nil || c.Fingerprint != "" || c.ExitCode != nil
	fileSet := c.Contains != nil || c.JSONPointer != nil || c.Equals != nil
	switch c.Kind {
	case KindReceipt:
		switch {
		case c.Path != "" || c.SHA256 != "" || fileSet || c.Prompt != "":
			return fmt.Errorf("only command, fingerprint and exit_code belong to a receipt criterion")
		case (c.Command == nil) == (c.Fingerprint == ""):
			return fmt.Errorf("give exactly one of command and fingerprint")
		case c.Fingerprint != "" && !isHexDigest(c.Fingerprint):
			return fmt.Errorf("fingerprint is not a hex SHA-256")
		case c.Command != nil && c.Command.Executable == "":
			return fmt.Errorf("command.executable is empty")
		case c.Command != nil && c.Command.Cwd != "" && wire.CheckRelPath(c.Command.Cwd) != nil:
			return wire.CheckRelPath(c.Command.Cwd)
		}
	case KindFile, KindArtefact:
		if receiptSet || c.Prompt != "" {
			return fmt.Errorf("only path, sha256, contains, json_pointer and equals belong to a %s criterion", c.Kind)
		}
		if err := relPath(c.Path); err != nil {
			return err
		}
		if c.Contains != nil && len(*c.Contains) > maxText {
			return fmt.Errorf("contains is over %d bytes", maxText)
		}
		if c.SHA256 != "" && !isHexDigest(c.SHA256) {
			return fmt.Errorf("sha256 is not a lowercase hex SHA-256")
		}
		if c.Kind == KindArtefact {
			if fileSet {
				return fmt.Errorf("an artefact criterion checks presence and sha256 only")
			}
			if !slices.Contains(st.Outputs, c.Path) {
				return fmt.Errorf("%s is not one of the step's outputs", c.Path)
			}
			return nil
		}
		if (c.JSONPointer == nil) != (c.Equals == nil) {
			return fmt.Errorf("json_pointer and equals go together")
		}
		if (c.JSONPointer != nil && len(*c.JSONPointer) > maxText) || len(c.Equals) > maxText {
			return fmt.Errorf("json_pointer and equals are at most %d bytes each", maxText)
		}
		if c.JSONPointer != nil {
			if _, err := parsePointer(*c.JSONPointer); err != nil {
				return err
			}
			var v any
			if err := decodeJSON(c.Equals, &v); err != nil {
				return fmt.Errorf("equals: %v", err)
			}
		}
	case KindOperator:
		if receiptSet || fileSet || c.Path != "" || c.SHA256 != "" {
			return fmt.Errorf("only prompt belongs to an operator criterion")
		}
		if c.Prompt == "" || len(c.Prompt) > maxText {
			return fmt.Errorf("prompt must be 1 to %d bytes: what the operator is asked to state", maxText)
		}
	default:
		return fmt.Errorf("kind %q is not one of receipt, file, artefact, operator", c.Kind)
	}
	return nil
}

// Step returns the step id, or nil.
func (s *Spec) Step(id string) *Step {
	for i := range s.Steps {
		if s.Steps[i].ID == id {
			return &s.Steps[i]
		}
	}
	return nil
}

func relPath(p string) error {
	if len(p) > maxPath {
		return fmt.Errorf("path of %d bytes is over %d", len(p), maxPath)
	}
	if p == "." {
		return fmt.Errorf("path %q names the workspace itself, not a file", p)
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("path %q escapes the workspace", p)
	}
	if err := wire.CheckRelPath(p); err != nil {
		return fmt.Errorf("path %q: %v", p, strings.TrimPrefix(err.Error(), "cwd: "))
	}
	return nil
}

func isHexDigest(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32 && strings.ToLower(s) == s
}

func invalid(format string, args ...any) error {
	return wire.Errorf(wire.CodeArgumentsInvalid, format, args...)
}
