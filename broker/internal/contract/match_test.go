package contract

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type matchCase struct {
	argv []string
	want string // "" to accept; else a fragment of the refusal
}

func args(s string) []string { return strings.Fields(s) }

// run matches each case and checks the outcome and, for an accepted
// argv, that each argument was taken once, in order.
func run(t *testing.T, c *Contract, dir *os.File, protected func(string) bool, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		p, err := c.Match(tc.argv, dir, protected)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: refused: %v", tc.argv, err)
		case tc.want != "" && err == nil:
			t.Errorf("%q: accepted as %+v, want a refusal saying %q", tc.argv, p.Args, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%q: refused with %q, want it to say %q", tc.argv, err, tc.want)
		case tc.want != "":
			var me *MatchError
			if !errors.As(err, &me) || p != nil {
				t.Errorf("%q: error %T, parse %v", tc.argv, err, p)
			}
		default:
			if err := accountedFor(c, tc.argv, p, dir, protected); err != nil {
				t.Errorf("%q: %v", tc.argv, err)
			}
		}
	}
}

func TestMatchStructure(t *testing.T) {
	dir, _ := tree(t, nil)
	c := mustDecode(t, grammar(`{"literal": "go"},
		{"flags": [{"flag": "-v"}, {"flag": "--all"},
			{"flag": "-n", "value": {"type": "int", "min": 1, "max": 99}, "forms": ["separate", "attached"], "max": 2},
			{"flag": "-m", "value": {"name": "mode", "type": "enum", "values": ["fast", "slow"]}, "forms": ["equals"]},
			{"flag": "-s", "value": {"type": "string", "pattern": "^[a-z]{1,4}$", "max_len": 4}, "forms": ["separate"]}]},
		{"optional": [{"literal": "--"}, {"operand": {"name": "word", "type": "enum", "values": ["x", "y"]}}]},
		{"repeat": {"min": 1, "max": 3, "of": [{"operand": {"name": "num", "type": "int", "min": 0, "max": 500}}]}},
		{"choice": [{"literal": "up"}, {"literal": "down", "then": [{"operand": {"name": "tag", "type": "string", "pattern": "^v[0-9]{1,3}$", "max_len": 4}}]}]}`))
	run(t, c, dir, gitProtected, []matchCase{
		{args("go 1 up"), ""},
		{args("go -v --all -n 5 -n7 -m=fast -s abc -- x 0 10 500 down v12"), ""},
		{args("go -- y 3 up"), ""},
		{args("run 1 up"), `argument 1 "run": expected "go"`},
		{args(""), `they end where it expects "go"`},
		{args("go"), "they end where it expects <num>"},
		{args("go 1"), "they end where it expects one of up, down"},
		{args("go 1 sideways"), `argument 3 "sideways": expected one of up, down`},
		{args("go 1 down"), "they end where it expects <tag>"},
		{args("go 1 down v1234"), "longer than 4 bytes"},
		{args("go 1 down x12"), "does not match ^v[0-9]{1,3}$"},
		{args("go 1 up extra"), `argument 4 "extra": nothing in the contract takes it here`},
		{args("go 1 2 3 4 up"), `argument 5 "4"`},
		{args("go -x 1 up"), "flag -x is not one this contract accepts here"},
		{args("go --all=1 1 up"), `flag --all does not take a value after "="`},
		{args("go -v -v 1 up"), "flag -v may be given at most 1 time(s)"},
		{args("go -n 1 -n 2 -n 3 1 up"), "flag -n may be given at most 2 time(s)"},
		{args("go -n=5 1 up"), `flag -n does not take a value after "="`},
		{args("go -m fast 1 up"), "flag -m takes its value joined to it (-m=V)"},
		{args("go -m=medium 1 up"), "the value of -m: it is not one of fast, slow"},
		{args("go -n 100 1 up"), "the value of -n: it is not a plain decimal integer from 1 to 99"},
		{args("go -n"), "they end where it expects a value for -n"},
		{args("go -n -5 1 up"), `begins with "-"`},
		{args("go -s -v 1 up"), `begins with "-"`},
		{args("go -s A 1 up"), "does not match"},
		{args("go 007 up"), "not a plain decimal integer"},
		{args("go +7 up"), "not a plain decimal integer"},
		{args("go 501 up"), "from 0 to 500"},
		{args("go 99999999999999999999 up"), "from 0 to 500"},
		{args("go -- z 1 up"), `argument 3 "z": <word>: it is not one of x, y`},
		{[]string{"go", "", "up"}, "an empty argument is never accepted"},
		{[]string{"go", "1", "down", "v1\n"}, "control character"},
		{slices.Repeat([]string{"1"}, 300), "300 arguments of 300 bytes exceed the caps"},
		{append(args("go 1 2 3"), slices.Repeat([]string{"up"}, 200)...), `argument 6 "up": nothing in the contract takes it here`},
	})
}

// TestMatchGreedy: matching never backtracks into what a group took, so
// an argv that a backtracking parser would accept is refused, always
// the same way.
func TestMatchGreedy(t *testing.T) {
	dir, _ := tree(t, map[string]string{"a": "", "b": ""})
	c := mustDecode(t, grammar(`{"repeat": {"min": 0, "max": 4, "of": [{"operand": {"name": "p", "type": "path", "access": "read"}}]}}, {"literal": "b"}`))
	run(t, c, dir, gitProtected, []matchCase{
		{args("a b"), `they end where it expects "b"`},
		{args("b"), `they end where it expects "b"`},
	})
}

func TestMatchPaths(t *testing.T) {
	dir, root := tree(t, map[string]string{
		"a.txt": "a", "pkg/x.go": "package x", "pkg/sub/": "", ".git/config": "", ".envrc": "",
		"link": "->pkg", "flink": "->a.txt", "pkg/up": "->..", "abs": "->/etc", "fifo": "|fifo",
		"dangling": "->../outside-new", "twice": "2",
	})
	if err := os.Link(filepath.Join(root, "twice"), filepath.Join(filepath.Dir(root), "outside-link")); err != nil {
		t.Fatal(err)
	}
	read := mustDecode(t, grammar(`{"repeat": {"min": 1, "max": 8, "of": [{"operand": {"name": "in", "type": "path", "access": "read"}}]}}`))
	write := mustDecode(t, grammar(`{"flags": [{"flag": "-o", "value": {"name": "out", "type": "path", "access": "write"}, "forms": ["separate", "equals"]}]}, {"literal": "x"}`))
	run(t, read, dir, gitProtected, []matchCase{
		{args("a.txt ./a.txt pkg pkg/x.go ./pkg/sub ."), ""},
		{args("missing"), "does not exist"},
		{args("../a.txt"), `climbs out with ".."`},
		{args("pkg/../a.txt"), `climbs out with ".."`},
		{args(filepath.Join(root, "a.txt")), "absolute path"},
		{args("/etc/passwd"), "absolute path"},
		{args("link/x.go"), "symbolic link"},
		{args("link"), "symbolic link"},
		{args("flink"), "symbolic link"},
		{args("pkg/up/a.txt"), "symbolic link"},
		{args("abs/passwd"), "symbolic link"},
		{args("pkg/"), "plain form"},
		{args("pkg//x.go"), "plain form"},
		{args("./"), "plain form"},
		{args("pkg/./x.go"), "plain form"},
		{args("*.txt"), "glob or pathspec"},
		{args("a?txt"), "glob or pathspec"},
		{args(":(top)a.txt"), "glob or pathspec"},
		{args("a.txt/x"), "not a directory"},
		{args("fifo"), "neither a regular file nor a directory"},
		{args(".git/config"), ".git/config is a protected path"},
		{args(".git"), ".git is a protected path"},
		{args(".envrc"), ".envrc is a protected path"},
	})
	run(t, write, dir, gitProtected, []matchCase{
		{args("-o new.bin x"), ""},
		{args("-o=pkg/new.bin x"), ""},
		{args("-o a.txt x"), ""},
		{args("-o pkg x"), "a path to write names a regular file"},
		{args("-o . x"), "a path to write names a regular file"},
		{args("-o fifo x"), "a path to write names a regular file"},
		{args("-o nodir/new x"), "does not exist"},
		{args("-o link/new x"), "symbolic link"},
		{args("-o flink x"), "symbolic link"},
		{args("-o dangling x"), "symbolic link"},
		{args("-o twice x"), "other hard links"},
		{args("-o ../new x"), "climbs out"},
		{args("-o .git/hooks/pre-commit x"), ".git/hooks/pre-commit is a protected path"},
		{args("-o .envrc x"), ".envrc is a protected path"},
	})
	for _, p := range []string{filepath.Join(root, "new.bin"), filepath.Join(filepath.Dir(root), "outside-new")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("matching a path to write created %s: %v", p, err)
		}
	}
}

// TestMatchProtectedAsked: the predicate is asked about the path and
// each directory above it, and its answer alone refuses.
func TestMatchProtectedAsked(t *testing.T) {
	dir, _ := tree(t, map[string]string{"src/a/b.txt": ""})
	c := mustDecode(t, grammar(`{"operand": {"name": "in", "type": "path", "access": "read"}}`))
	var asked []string
	_, err := c.Match(args("src/a/b.txt"), dir, func(p string) bool { asked = append(asked, p); return false })
	if err != nil || !slices.Equal(asked, []string{"src/a/b.txt", "src/a", "src", "."}) {
		t.Fatalf("asked %q, err %v", asked, err)
	}
	for _, p := range asked {
		if _, err := c.Match(args("src/a/b.txt"), dir, func(q string) bool { return q == p }); err == nil || !strings.Contains(err.Error(), p+" is a protected path") {
			t.Errorf("protecting %q: %v", p, err)
		}
	}
}

// TestMatchByDescriptor: resolution is beneath the directory given,
// whatever its path has become.
func TestMatchByDescriptor(t *testing.T) {
	dir, root := tree(t, map[string]string{"pkg/x.go": "", "package.json": `{"scripts": {"build": "x"}}`})
	if err := os.Rename(root, root+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	c := mustDecode(t, grammar(`{"operand": {"name": "p", "type": "go-package"}}, {"operand": {"name": "s", "type": "package-script"}}`))
	run(t, c, dir, gitProtected, []matchCase{{args("./pkg build"), ""}})
}

func TestMatchGoPackage(t *testing.T) {
	dir, _ := tree(t, map[string]string{"pkg/sub/x.go": "", "a.go": "", "link": "->pkg", ".git/": ""})
	c := mustDecode(t, grammar(`{"repeat": {"min": 1, "max": 8, "of": [{"operand": {"name": "pkg", "type": "go-package"}}]}}`))
	run(t, c, dir, gitProtected, []matchCase{
		{args(". ./... ./pkg ./pkg/... ./pkg/sub ./pkg/sub/..."), ""},
		{args("pkg"), "a Go package pattern here is"},
		{args("./pkg/"), "plain form"},
		{args("./pkg/.../sub"), "a Go package pattern here is"},
		{args("./pkg..."), "a Go package pattern here is"},
		{args("././pkg"), "a Go package pattern here is"},
		{args("./."), "a Go package pattern here is"},
		{args("./a.go"), "not a directory"},
		{args("./link"), "symbolic link"},
		{args("./link/sub"), "symbolic link"},
		{args("./missing/..."), "does not exist"},
		{args("./.git"), ".git is a protected path"},
		{args("../outside"), `climbs out with ".."`},
		{args("./../outside"), `climbs out with ".."`},
		{args("/abs/..."), "absolute path"},
		{args("example.com/m/..."), "a Go package pattern here is"},
		{args("std"), "a Go package pattern here is"},
	})
	var p *Parse
	p, err := c.Match(args("./pkg/sub/... ./..."), dir, gitProtected)
	if err != nil || p.Args[0].Path != "pkg/sub" || p.Args[1].Path != "." {
		t.Fatalf("parse %+v, %v", p, err)
	}
}

func TestMatchPackageScript(t *testing.T) {
	c := mustDecode(t, grammar(`{"literal": "run"}, {"operand": {"name": "script", "type": "package-script"}}`))
	good, _ := tree(t, map[string]string{"package.json": `{"name": "x", "scripts": {"build": "tsc", "test:unit": "jest", "n": 1}, "Scripts": {"evil": "x"}}`})
	run(t, c, good, gitProtected, []matchCase{
		{args("run build"), ""},
		{args("run test:unit"), ""},
		{args("run n"), `package.json has no script "n"`},
		{args("run evil"), `package.json has no script "evil"`},
		{args("run lint"), `package.json has no script "lint"`},
		{args("run --silent"), `begins with "-"`},
	})
	cases := map[string]map[string]string{
		"package.json: it does not exist":   {"other.json": "{}"},
		"package.json: a symbolic link":     {"real.json": `{"scripts": {"build": "x"}}`, "package.json": "->real.json"},
		"package.json is not a JSON object": {"package.json": `["scripts"]`},
		`no "scripts" object`:               {"package.json": `{"scripts": ["build"]}`},
		"is larger than 1048576 bytes":      {"package.json": `{"scripts": {"build": "x"}, "pad": "` + strings.Repeat("x", 1<<20) + `"}`},
		"not a regular file":                {"package.json/": ""},
	}
	for want, entries := range cases {
		dir, _ := tree(t, entries)
		run(t, c, dir, gitProtected, []matchCase{{args("run build"), want}})
	}
}

func TestMatchMakeTarget(t *testing.T) {
	c := mustDecode(t, grammar(`{"repeat": {"min": 1, "max": 8, "of": [{"operand": {"name": "target", "type": "make-target"}}]}}`))
	makefile := "# comment\nbuild: dep\n\tgo build: x\ntest lint:: build\nX := y\nY = a:b\nZ ::= q\n%.o: %.c\n$(OUT): x\n" +
		".PHONY: build phony\ndefine RULE\ninside:\nendef\nafter\\\ncontinued: x\n  spaced: x\nbin/app: x\nrelease: VAR = 1\n"
	dir, _ := tree(t, map[string]string{"Makefile": makefile})
	run(t, c, dir, gitProtected, []matchCase{
		{args("build test lint release"), ""},
		{args("X"), `no target "X"`},
		{args("Y"), `no target "Y"`},
		{args("Z"), `no target "Z"`},
		{args("go"), `no target "go"`},
		{args("phony"), `no target "phony"`},
		{args(".PHONY"), `no target ".PHONY"`},
		{args("inside"), `no target "inside"`},
		{args("continued"), `no target "continued"`},
		{args("spaced"), `no target "spaced"`},
		{args("bin/app"), `no target "bin/app"`},
		{args("%.o"), `no target "%.o"`},
		{args("VAR=1"), `no target "VAR=1"`},
		{args("-f"), `begins with "-"`},
	})
	gnu, _ := tree(t, map[string]string{"GNUmakefile": "gnu:\n", "makefile": "lower:\n", "Makefile": "build:\n"})
	run(t, c, gnu, gitProtected, []matchCase{{args("gnu"), ""}, {args("build"), `no target "build"`}, {args("lower"), `no target "lower"`}})
	lower, _ := tree(t, map[string]string{"makefile": "lower:\n", "Makefile": "build:\n"})
	run(t, c, lower, gitProtected, []matchCase{{args("lower"), ""}, {args("build"), `no target "build"`}})
	linked, _ := tree(t, map[string]string{"GNUmakefile": "->real.mk", "real.mk": "build:\n", "Makefile": "build:\n"})
	run(t, c, linked, gitProtected, []matchCase{{args("build"), "GNUmakefile: a symbolic link"}})
	none, _ := tree(t, map[string]string{"build.mk": "build:\n"})
	run(t, c, none, gitProtected, []matchCase{{args("build"), "there is no GNUmakefile, makefile or Makefile"}})
}

func TestMatchNeedsDirAndPredicate(t *testing.T) {
	dir, _ := tree(t, nil)
	c := mustDecode(t, grammar(`{"literal": "x"}`))
	if _, err := c.Match(args("x"), nil, gitProtected); err == nil {
		t.Error("matched without a directory")
	}
	if _, err := c.Match(args("x"), dir, nil); err == nil {
		t.Error("matched without a protected predicate")
	}
}

// TestMatchBounded: a grammar built to make the walk retry the same
// arguments (optional groups of flag sets that fail at their end, in a
// repetition) stays far below maxSteps, because validation bounds what
// a grammar may take (256 arguments); maxSteps is the backstop.
func TestMatchBounded(t *testing.T) {
	dir, _ := tree(t, nil)
	sets := strings.Repeat(`{"flags": [{"flag": "-v", "max": 16}]}, `, 2)
	retry := `{"optional": [` + sets + `{"literal": "never"}]}`
	c := mustDecode(t, grammar(`{"repeat": {"min": 0, "max": 3, "of": [`+retry+`, `+retry+`, {"literal": "-v"}]}}`))
	m := &matcher{argv: slices.Repeat([]string{"-v"}, 200), dir: dir, protected: gitProtected, seen: map[string]lookedUp{}}
	if _, ok := m.seq(c.f.Argv, 0); !ok || m.steps > maxSteps/16 {
		t.Fatalf("ok %v after %d steps", ok, m.steps)
	}
	t.Logf("%d steps", m.steps)
}
