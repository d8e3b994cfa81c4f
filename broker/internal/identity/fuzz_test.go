// The broker's fuzz targets live here, beside the parsers they check
// (shebang parsing and admission), rather than in fuzz/: this package is
// internal to broker/, and it links no SQLite, which `go test -fuzz`
// would instrument too (in 30 s, FuzzReceiptDecode ran 0.31 M executions
// with SQLite linked and 1.42 M without). `make fuzz` runs them, and
// fuzz.TestFuzzCorporaNotEmpty checks their seed corpora.

package identity

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"warrant/wire"
)

// FuzzBrokerShebang: ParseShebang never panics; when it accepts a line,
// the interpreter is a clean absolute path without blanks, the argument
// has no newline or NUL, and both came from the first line of the head.
func FuzzBrokerShebang(f *testing.F) {
	f.Fuzz(func(t *testing.T, head []byte) {
		sb, err := ParseShebang(head)
		if err != nil || sb == nil {
			if sb != nil {
				t.Fatal("a value beside an error")
			}
			return
		}
		first, _, ok := strings.Cut(string(head), "\n")
		if !ok || len(first)+1 > MaxShebang {
			t.Fatalf("accepted a line that does not end within %d bytes", MaxShebang)
		}
		in := sb.Interpreter
		if !path.IsAbs(in) || path.Clean(in) != in || strings.ContainsAny(in, " \t\n\x00") || !utf8.ValidString(in) {
			t.Fatalf("interpreter %q", in)
		}
		if strings.ContainsAny(sb.Arg, "\n\x00") || strings.HasPrefix(sb.Arg, " ") || strings.HasSuffix(sb.Arg, "\t") {
			t.Fatalf("argument %q", sb.Arg)
		}
		if !strings.Contains(first, in) || !strings.Contains(first, sb.Arg) {
			t.Fatalf("%+v is not from the first line %q", sb, first)
		}
	})
}

// FuzzBrokerAdmit decodes an agent frame body and, for a submit, runs
// admission. Admission never panics, refuses only with ARGUMENTS_INVALID
// or PATH_INVALID, and what it accepts meets the request caps of
// docs/architecture.md §2.1 — with argv passed through byte for byte.
func FuzzBrokerAdmit(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := wire.Decode(body, wire.AgentChannel)
		if err != nil {
			return
		}
		s, ok := m.(*wire.Submit)
		if !ok {
			return
		}
		before := append([]string(nil), s.Request.Argv...)
		err = Admit(s)
		if err != nil {
			we, ok := err.(*wire.Error)
			if !ok || (we.Code != wire.CodeArgumentsInvalid && we.Code != wire.CodePathInvalid) || we.Message == "" {
				t.Fatalf("refusal %v", err)
			}
			return
		}
		if len(s.Request.Argv) != len(before) {
			t.Fatal("admission changed argv")
		}
		total := 0
		for i, a := range s.Request.Argv {
			if a != before[i] || len(a) > wire.MaxArgBytes || strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("argv[%d] %q", i, a)
			}
			total += len(a)
		}
		if len(before) > wire.MaxArgs || total > wire.MaxArgvBytes {
			t.Fatal("admitted argv over the caps")
		}
		if err := wire.CheckRelPath(s.Request.Cwd); err != nil {
			t.Fatalf("admitted cwd: %v", err)
		}
		exe := s.Request.Executable
		if path.IsAbs(exe) && path.Clean(exe) != exe {
			t.Fatalf("admitted executable %q", exe)
		}
		if rel := strings.TrimPrefix(exe, "./"); wire.WorkspaceExecutable(exe) && (path.IsAbs(rel) || path.Clean(rel) != rel || rel == "." || rel == ".." || strings.HasPrefix(rel, "../")) {
			t.Fatalf("admitted workspace executable %q", exe)
		}
	})
}
