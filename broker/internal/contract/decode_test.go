package contract

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestDecodeAccepts(t *testing.T) {
	c := mustDecode(t, `{"format": 1, "name": "go-x", "description": "a tool", "executable": "/usr/bin/tool",
		"argv": [{"literal": "run"}, {"flags": [{"flag": "-v"}, {"flag": "-n", "value": {"type": "int", "min": 0, "max": 9}, "forms": ["attached"]}]},
			{"optional": [{"operand": {"name": "mode", "type": "enum", "values": ["fast", "slow"]}}]},
			{"repeat": {"min": 0, "max": 4, "of": [{"operand": {"name": "file", "type": "path", "access": "read"}}]}},
			{"choice": [{"literal": "a"}, {"literal": "b", "then": [{"operand": {"name": "s", "type": "string", "pattern": "^[a-z]{1,8}$", "max_len": 8}}]}]}]}`)
	if c.Name() != "go-x" || c.Executable() != "/usr/bin/tool" || c.Description() != "a tool" {
		t.Fatalf("decoded %q %q %q", c.Name(), c.Executable(), c.Description())
	}
	if len(c.Digest()) != 64 {
		t.Fatalf("digest %q", c.Digest())
	}
}

// TestDigestCanonical: the digest ignores spacing, key order and a
// default written out, and changes with anything that changes what is
// accepted or shown.
func TestDigestCanonical(t *testing.T) {
	base := mustDecode(t, `{"format":1,"name":"t","executable":"tool","argv":[{"flags":[{"flag":"-v"}]},{"literal":"x"}]}`)
	same := []string{
		`{ "argv" : [ {"flags": [{"flag": "-v"}]}, {"literal": "x"} ], "executable": "tool", "name": "t", "format": 1 }`,
		`{"format":1,"name":"t","executable":"tool","argv":[{"flags":[{"flag":"-v","max":1}]},{"literal":"x"}]}`,
	}
	for _, s := range same {
		if got := mustDecode(t, s).Digest(); got != base.Digest() {
			t.Errorf("%s: digest %s, want %s", s, got, base.Digest())
		}
	}
	differ := []string{
		`{"format":1,"name":"t","executable":"tool","argv":[{"flags":[{"flag":"-v","max":2}]},{"literal":"x"}]}`,
		`{"format":1,"name":"t","executable":"tool","argv":[{"flags":[{"flag":"-w"}]},{"literal":"x"}]}`,
		`{"format":1,"name":"t","executable":"tool2","argv":[{"flags":[{"flag":"-v"}]},{"literal":"x"}]}`,
		`{"format":1,"name":"t","description":"d","executable":"tool","argv":[{"flags":[{"flag":"-v"}]},{"literal":"x"}]}`,
		`{"format":1,"name":"t","executable":"tool","argv":[{"literal":"x"},{"flags":[{"flag":"-v"}]}]}`,
	}
	for _, s := range differ {
		if mustDecode(t, s).Digest() == base.Digest() {
			t.Errorf("%s: same digest as the base", s)
		}
	}
	want := `{"argv":[{"flags":[{"flag":"-v","max":1}]},{"literal":"x"}],"executable":"tool","format":1,"name":"t"}`
	if got := string(base.Canonical()); got != want {
		t.Errorf("canonical %s, want %s", got, want)
	}
	again := mustDecode(t, string(base.Canonical()))
	if again.Digest() != base.Digest() || !bytes.Equal(again.Canonical(), base.Canonical()) {
		t.Error("the canonical form does not decode to itself")
	}
}

func nest(depth int) string {
	s := `{"literal": "x"}`
	for range depth {
		s = `{"optional": [` + s + `]}`
	}
	return s
}

func TestDecodeRefuses(t *testing.T) {
	op := func(v string) string { return grammar(`{"operand": ` + v + `}`) }
	str := func(pattern string) string {
		return op(fmt.Sprintf(`{"name": "s", "type": "string", "pattern": %q, "max_len": 10}`, pattern))
	}
	flags := func(fs string) string { return grammar(`{"flags": [` + fs + `]}`) }
	var many []string
	for range 257 {
		many = append(many, `{"literal": "x"}`)
	}
	var sixteen, sixtyFive []string
	for i := range 16 {
		sixteen = append(sixteen, fmt.Sprintf(`{"flag": "-%c", "max": 16, "value": {"type": "string", "pattern": "^[a-z]{1,10}$", "max_len": 1024}, "forms": ["equals"]}`, 'a'+i))
	}
	for i := range 65 {
		sixtyFive = append(sixtyFive, fmt.Sprintf(`{"flag": "-f%d"}`, i))
	}
	cases := []struct{ name, in, want string }{
		{"oversize", grammar(`{"literal": "x"}`) + strings.Repeat(" ", MaxFileBytes), "exceeds the cap"},
		{"invalid UTF-8", "{\"format\": 1, \"name\": \"\xff\"}", "not valid UTF-8"},
		{"empty", ``, "no JSON object"},
		{"a list", `[]`, "a contract is a JSON object"},
		{"a string", `"x"`, "a contract is a JSON object"},
		{"trailing object", grammar(`{"literal": "x"}`) + `{}`, "data after the JSON object"},
		{"trailing garbage", grammar(`{"literal": "x"}`) + ` x`, "invalid character"},
		{"unknown field", `{"format": 1, "nmae": "t"}`, `unknown field "nmae"`},
		{"case variant", `{"format": 1, "Name": "t"}`, `unknown field "Name"`},
		{"field of another type", grammar(`{"literal": "x", "pattern": "^a$"}`), `unknown field "pattern"`},
		{"duplicate key", `{"format": 1, "name": "t", "name": "u"}`, `"name" given twice`},
		{"duplicate nested key", op(`{"name": "a", "name": "b", "type": "path", "access": "read"}`), `"name" given twice`},
		{"null", `{"format": 1, "description": null}`, "null is not a value"},
		{"empty list", `{"format": 1, "name": "t", "executable": "x", "argv": []}`, "an empty list"},
		{"too deep", grammar(nest(16)), "nested deeper than 32"},
		{"float", `{"format": 1.5}`, "cannot unmarshal"},
		{"format 2", `{"format": 2, "name": "t", "executable": "x", "argv": [{"literal": "x"}]}`, "format: 2 is not 1"},
		{"no format", `{"name": "t", "executable": "x", "argv": [{"literal": "x"}]}`, "format: 0 is not 1"},
		{"bad name", `{"format": 1, "name": "Go Test", "executable": "x", "argv": [{"literal": "x"}]}`, "name:"},
		{"description with a newline", `{"format": 1, "name": "t", "description": "a\nb", "executable": "x", "argv": [{"literal": "x"}]}`, "description:"},
		{"no argv", `{"format": 1, "name": "t", "executable": "x"}`, "argv: missing"},
		{"relative executable", `{"format": 1, "name": "t", "executable": "bin/go", "argv": [{"literal": "x"}]}`, "executable:"},
		{"unclean executable", `{"format": 1, "name": "t", "executable": "/usr//bin/go", "argv": [{"literal": "x"}]}`, "not a clean absolute path"},
		{"no executable", `{"format": 1, "name": "t", "argv": [{"literal": "x"}]}`, "executable:"},
		{"element sets nothing", grammar(`{}`), "sets 0"},
		{"element sets two", grammar(`{"literal": "x", "operand": {"name": "p", "type": "go-package"}}`), "sets 2"},
		{"empty literal", grammar(`{"literal": ""}`), "literal"},
		{"control literal", grammar(`{"literal": "a\u0001"}`), "printable ASCII"},
		{"non-ASCII literal", grammar(`{"literal": "tést"}`), "printable ASCII"},
		{"flag without dash", flags(`{"flag": "run"}`), "is not a flag"},
		{"flag with =", flags(`{"flag": "-a=b"}`), "is not a flag"},
		{"flag twice", flags(`{"flag": "-v"}, {"flag": "-v"}`), "listed twice"},
		{"flag max", flags(`{"flag": "-v", "max": 17}`), "max: 17"},
		{"valued flag without forms", flags(`{"flag": "-n", "value": {"type": "int", "min": 0, "max": 1}}`), "list how"},
		{"forms without a value", flags(`{"flag": "-v", "forms": ["separate"]}`), "takes no value"},
		{"unknown form", flags(`{"flag": "-n", "value": {"type": "int", "min": 0, "max": 1}, "forms": ["glued"]}`), "unknown or given twice"},
		{"form twice", flags(`{"flag": "-n", "value": {"type": "int", "min": 0, "max": 1}, "forms": ["equals", "equals"]}`), "unknown or given twice"},
		{"attached long flag", flags(`{"flag": "--count", "value": {"type": "int", "min": 0, "max": 1}, "forms": ["attached"]}`), "long flag"},
		{"attached ambiguous", flags(`{"flag": "-n", "value": {"type": "int", "min": 0, "max": 1}, "forms": ["attached"]}, {"flag": "-name"}`), "ambiguous"},
		{"too many flags", flags(strings.Join(sixtyFive, ",")), "more than 64 flags"},
		{"operand without a name", op(`{"type": "go-package"}`), "needs a name"},
		{"bad operand name", op(`{"name": "Pkg", "type": "go-package"}`), "name:"},
		{"unknown type", op(`{"name": "f", "type": "file"}`), `"file" is not one of`},
		{"enum without values", op(`{"name": "e", "type": "enum"}`), "requires values"},
		{"enum value with a dash", op(`{"name": "e", "type": "enum", "values": ["-x"]}`), "begins with"},
		{"enum value twice", op(`{"name": "e", "type": "enum", "values": ["a", "a"]}`), "twice"},
		{"int with a pattern", op(`{"name": "n", "type": "int", "min": 0, "max": 1, "pattern": "^a$"}`), "pattern does not apply to type int"},
		{"int without max", op(`{"name": "n", "type": "int", "min": 0}`), "requires max"},
		{"int min above max", op(`{"name": "n", "type": "int", "min": 5, "max": 1}`), "min 5 and max 1"},
		{"int negative", op(`{"name": "n", "type": "int", "min": -1, "max": 1}`), "min -1"},
		{"string without max_len", op(`{"name": "s", "type": "string", "pattern": "^a$"}`), "requires max_len"},
		{"string without pattern", op(`{"name": "s", "type": "string", "max_len": 3}`), "requires pattern"},
		{"string max_len", op(`{"name": "s", "type": "string", "pattern": "^a$", "max_len": 5000}`), "max_len: 5000"},
		{"path without access", op(`{"name": "p", "type": "path"}`), "requires access"},
		{"path access exec", op(`{"name": "p", "type": "path", "access": "exec"}`), `"exec" is not`},
		{"go-package with access", op(`{"name": "p", "type": "go-package", "access": "read"}`), "access does not apply"},
		{"pattern not anchored", str(`[a-z]{1,3}`), "not anchored"},
		{"pattern without $", str(`^[a-z]{1,3}`), "not anchored"},
		{"pattern with \\$ last", str(`^a\$`), "not anchored"},
		{"pattern .*", str(`^.*$`), "repeats without bound"},
		{"pattern .+", str(`^.+$`), "repeats without bound"},
		{"pattern .{1,10}", str(`^.{1,10}$`), `"." matches any character`},
		{"pattern star", str(`^[a-z]*$`), "repeats without bound"},
		{"pattern plus", str(`^[a-z]+$`), "repeats without bound"},
		{"pattern {1,}", str(`^[a-z]{1,}$`), "repeats without bound"},
		{"pattern [^x]", str(`^[^x]{1,10}$`), "outside printable ASCII"},
		{"pattern \\S", str(`^\S{1,10}$`), "outside printable ASCII"},
		{"pattern \\s", str(`^a\sb$`), "outside printable ASCII"},
		{"pattern \\pL", str(`^\pL{1,10}$`), "outside printable ASCII"},
		{"pattern newline", str(`^a\nb$`), "outside printable ASCII"},
		{"pattern non-ASCII", str(`^é{1,3}$`), "outside printable ASCII"},
		{"pattern (?i)", str(`^(?i)k{1,3}$`), "case folding"},
		{"pattern (?m)", str(`^(?m)a$`), "multi-line"},
		{"pattern invalid", str(`^[a-$`), "error parsing regexp"},
		{"pattern too long", str(`^` + strings.Repeat("a", 600) + `$`), "longer than 512"},
		{"repeat without min", grammar(`{"repeat": {"max": 2, "of": [{"literal": "x"}]}}`), "both required"},
		{"repeat max 0", grammar(`{"repeat": {"min": 0, "max": 0, "of": [{"literal": "x"}]}}`), "min 0 and max 0"},
		{"repeat max 257", grammar(`{"repeat": {"min": 0, "max": 257, "of": [{"literal": "x"}]}}`), "max 257"},
		{"repeat min above max", grammar(`{"repeat": {"min": 3, "max": 2, "of": [{"literal": "x"}]}}`), "min 3 and max 2"},
		{"repeat of nothing", grammar(`{"repeat": {"min": 0, "max": 2, "of": [{"flags": [{"flag": "-v"}]}]}}`), "can match nothing"},
		{"optional of nothing", grammar(`{"optional": [{"flags": [{"flag": "-v"}]}]}`), "optional already"},
		{"choice twice", grammar(`{"choice": [{"literal": "a"}, {"literal": "a"}]}`), "an alternative twice"},
		{"choice of a flag", grammar(`{"choice": [{"literal": "-a"}]}`), "not a subcommand"},
		{"groups too deep", grammar(nest(9)), "groups nested deeper than 8"},
		{"too many nodes", grammar(strings.Join(many, ",")), "more than 256 nodes"},
		{"too many arguments", grammar(`{"repeat": {"min": 0, "max": 200, "of": [{"literal": "a"}, {"literal": "b"}]}}`), "up to 400 arguments"},
		{"too many bytes", grammar(`{"flags": [` + strings.Join(sixteen, ",") + `]}`), "bytes of arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode([]byte(tc.in))
			if err == nil || c != nil {
				t.Fatalf("accepted (%v)", c)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}
