package contract

import (
	"bytes"
	"encoding/json"
	goflag "flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var update = goflag.Bool("update", false, "rewrite testdata/library/*.json from the library")

// libraryCases are, per shipped contract, argvs it must accept (want
// "") and refuse (want a fragment of the reason). The examples
// are among them.
var libraryCases = map[string][]matchCase{
	"go-test": {
		{args("test -run TestX ./pkg"), ""},
		{args("test ./..."), ""},
		{args("test"), ""},
		{args("test -run=TestX|TestY -v -count=1 -race -short -timeout 10m ./pkg/..."), ""},
		{args("test ./pkg ./pkg/sub -run ^TestX$ -count 3 -timeout=1m30s"), ""},
		{args("test -v -json -failfast . -v"), ""},
		{args("test -skip TestSlow ."), ""},
		{args("test -exec /bin/sh ./..."), "flag -exec is not one this contract accepts"},
		{args("test ../outside"), `climbs out with ".."`},
		{args("test -toolexec x ./..."), "flag -toolexec is not one this contract accepts"},
		{args("test -toolexec x"), "flag -toolexec is not one this contract accepts"},
		{args("test -c ./pkg"), "flag -c is not one"},
		{args("test -o bin ./pkg"), "flag -o is not one"},
		{args("test -coverprofile=c.out ./..."), "flag -coverprofile is not one"},
		{args("test -ldflags=-X ./..."), "flag -ldflags is not one"},
		{args("test ./pkg -args -foo"), "flag -args is not one"},
		{args("test ./pkg -v -v"), "flag -v may be given at most 1 time(s)"},
		{args("test -count 0 ./pkg"), "from 1 to 1000"},
		{args("test -timeout 1d ./pkg"), "does not match"},
		{[]string{"test", "-run", "Test X", "./pkg"}, "does not match"},
		{args("test -run"), "they end where it expects a value for -run"},
		{args("test ./link"), "symbolic link"},
		{args("test ./missing/..."), "does not exist"},
		{args("test ./a.txt"), "not a directory"},
		{args("test ./.git"), ".git is a protected path"},
		{args("test pkg"), "a Go package pattern here is"},
		{args("test example.com/m/..."), "a Go package pattern here is"},
		{args("vet ./..."), `expected "test"`},
	},
	"go": {
		{args("test ./..."), ""},
		{args("test -run TestX ./pkg"), ""},
		{args("test ./pkg -run=TestX -count 2 -v"), ""},
		{args("vet ./..."), ""},
		{args("build ./..."), ""},
		{args("build -o out/app ./pkg"), ""},
		{args("test -exec /bin/sh ./..."), "flag -exec is not one this contract accepts"},
		{args("test -toolexec x ./..."), "flag -toolexec is not one this contract accepts"},
		{args("test ../outside"), `climbs out with ".."`},
		{args("vet -vettool=/bin/sh ./..."), `it begins with "-"`},
		{args("build -o ../app ."), `climbs out with ".."`},
		{args("build -ldflags -X=main.v=1 ."), "flag -ldflags is not one"},
		{args("build -run TestX ."), "flag -run is not one"},
		{args("run ./cmd"), "expected one of test, vet, build"},
		{args("generate ./..."), "expected one of test, vet, build"},
		{args("env -w GOFLAGS=-toolexec=x"), "expected one of test, vet, build"},
		{args("-C /tmp test"), "expected one of test, vet, build"},
	},
	"go-vet": {
		{args("vet ./..."), ""},
		{args("vet ./pkg ./pkg/sub"), ""},
		{args("vet"), ""},
		{args("vet -vettool=/bin/sh ./..."), `argument 2 "-vettool=/bin/sh": <package>: it begins with "-"`},
		{args("vet ../x"), `climbs out with ".."`},
	},
	"go-build": {
		{args("build ./..."), ""},
		{args("build -o out/app ./pkg"), ""},
		{args("build -o=app -trimpath -v ."), ""},
		{args("build -o /tmp/app ./pkg"), "absolute path"},
		{args("build -o ../app ."), `climbs out with ".."`},
		{args("build -o out ."), "a path to write names a regular file"},
		{args("build -o link/app ."), "symbolic link"},
		{args("build -o .git/hooks/pre-commit ."), ".git/hooks/pre-commit is a protected path"},
		{args("build -toolexec x ."), "flag -toolexec is not one"},
		{args("build -exec x ."), "flag -exec is not one"},
		{args("build -ldflags -X=main.v=1 ."), "flag -ldflags is not one"},
		{args("build -gcflags=all=-N ."), "flag -gcflags is not one"},
	},
	"gofmt": {
		{args("-l ."), ""},
		{args("-d -s main.go pkg"), ""},
		{args("-l -e -s ./pkg/x.go"), ""},
		{args("-w ."), "flag -w is not one this contract accepts"},
		{args("-l -w main.go"), "flag -w is not one this contract accepts"},
		{args("-r a->b ."), "flag -r is not one"},
		{args("-cpuprofile prof ."), "flag -cpuprofile is not one"},
		{args("-l"), "they end where it expects <path>"},
		{args("-l ../x"), `climbs out with ".."`},
		{args("-l /etc"), "absolute path"},
		{args("-l link"), "symbolic link"},
		{args("-l .git"), ".git is a protected path"},
		{args("-l . -w"), `argument 3 "-w": <path>: it begins with "-"`},
	},
	"npm-test": {
		{args("test"), ""},
		{args("test -- --watch"), `argument 2 "--": nothing in the contract takes it here`},
		{args("run test"), `expected "test"`},
		{args("install evil"), `expected "test"`},
	},
	"npm-run": {
		{args("run build"), ""},
		{args("run lint"), ""},
		{args("run deploy"), `package.json has no script "deploy"`},
		{args("run build -- --prod"), "nothing in the contract takes it here"},
		{args("run"), "they end where it expects <script>"},
		{args("run-script build"), `expected "run"`},
		{args("exec evil"), `expected "run"`},
	},
	"pytest": {
		{args("-m pytest"), ""},
		{args("-m pytest -x -q tests"), ""},
		{[]string{"-m", "pytest", "-k", "test_a and not slow", "tests/test_a.py"}, ""},
		{args("-m pytest -v -k test_a[1-2] tests/test_a.py"), ""},
		{args("-c import_os"), `expected "-m"`},
		{args("-m pip install x"), `expected "pytest"`},
		{args("-m pytest -p evil"), "flag -p is not one"},
		{args("-m pytest --rootdir=/"), "flag --rootdir is not one"},
		{args("-m pytest -k"), "they end where it expects a value for -k"},
		{args("-m pytest -k=x"), `flag -k does not take a value after "="`},
		{args("-m pytest ../x"), `climbs out with ".."`},
		{args("-m pytest tests/test_a.py::test_x"), "does not exist"},
		{args("-m pytest .envrc"), ".envrc is a protected path"},
	},
	"cargo": {
		{args("test"), ""},
		{args("test --release -p core --lib"), ""},
		{args("test my_test"), ""},
		{args("test --tests mod::my_test"), ""},
		{args("build --release"), ""},
		{args("check --tests -p a -p b"), ""},
		{args("install x"), "expected one of test, build, check"},
		{args("run"), "expected one of test, build, check"},
		{args("+nightly build"), "expected one of test, build, check"},
		{args("-Zunstable build"), "expected one of test, build, check"},
		{args("test -- --nocapture"), "flag -- is not one"},
		{args("build --target-dir /tmp"), "flag --target-dir is not one"},
		{args("test --config x"), "flag --config is not one"},
		{args("build my_test"), "nothing in the contract takes it here"},
		{args("build -p=x"), `flag -p does not take a value after "="`},
	},
	"git": {
		{args("status"), ""},
		{args("status --short"), ""},
		{args("diff"), ""},
		{args("diff --cached"), ""},
		{args("diff --stat -- a.txt pkg"), ""},
		{args("diff a.txt"), ""},
		{args("log --oneline -n 5"), ""},
		{args("log -n5"), ""},
		{args("show"), ""},
		{args("show HEAD~2"), ""},
		{args("show --stat 0123abc"), ""},
		{args("add -A"), ""},
		{args("add a.txt pkg"), ""},
		{args("add -- a.txt"), ""},
		{[]string{"commit", "-m", "fix: x"}, ""},
		{[]string{"commit", "-a", "-m", "feat(contract): a message with 'quotes' & $signs"}, ""},
		{args("-c core.fsmonitor=x status"), `argument 1 "-c": expected one of status, diff, log, show, add, commit`},
		{args("--exec-path=/tmp status"), "expected one of status"},
		{args("-C /tmp status"), "expected one of status"},
		{args("--no-pager status"), "expected one of status"},
		{args("st"), "expected one of status"},
		{args("push"), "expected one of status"},
		{args("config core.hooksPath x"), "expected one of status"},
		{args("status --porcelain=v2"), `flag --porcelain does not take a value after "="`},
		{args("diff --output=/tmp/x"), "flag --output is not one"},
		{args("diff --ext-diff"), "flag --ext-diff is not one"},
		{args("diff --no-index /etc/passwd a.txt"), "flag --no-index is not one"},
		{args("log --format=%H"), "flag --format is not one"},
		{args("log -p"), "flag -p is not one"},
		{args("log -n=5"), `flag -n does not take a value after "="`},
		{args("show HEAD:secret"), "does not match"},
		{args("add .git/config"), ".git/config is a protected path"},
		{args("add ../x"), `climbs out with ".."`},
		{args("add link"), "symbolic link"},
		{args("add *.go"), "glob or pathspec"},
		{args("add :(exclude)a.txt"), "glob or pathspec"},
		{args("commit"), `they end where it expects "-m"`},
		{args("commit -m"), "they end where it expects <message>"},
		{args("commit --amend -m x"), "flag --amend is not one"},
		{args("commit -m -x"), `begins with "-"`},
		{args("commit -m x -n"), "nothing in the contract takes it here"},
		{[]string{"commit", "-m", "line one\nline two"}, "control character"},
		{[]string{"commit", "-m", "café"}, "does not match"},
	},
	"make": {
		{nil, ""},
		{args("build"), ""},
		{args("-j 4 test build"), ""},
		{args("-j4"), ""},
		{args("-f other.mk build"), "flag -f is not one"},
		{args("-C /tmp build"), "flag -C is not one"},
		{args("--eval=x"), "flag --eval is not one"},
		{args("deploy"), `no target "deploy"`},
		{args("CC=evil build"), `no target "CC=evil"`},
		{args("-j 100"), "from 1 to 64"},
		{args("-j build"), "from 1 to 64"},
		{args(".PHONY"), `no target ".PHONY"`},
	},
}

func libraryTree(t testing.TB) *os.File {
	dir, _ := tree(t, map[string]string{
		"go.mod": "module m\n", "main.go": "package main\n", "pkg/x.go": "package pkg\n", "pkg/sub/y.go": "package sub\n",
		"tests/test_a.py": "", "a.txt": "", "link": "->pkg", ".git/config": "", ".git/hooks/": "", ".envrc": "", "out/": "",
		"package.json": `{"name": "m", "scripts": {"build": "tsc", "lint": "eslint ."}}`,
		"Makefile":     "build:\n\tgo build ./...\ntest: build\n\tgo test ./...\n.PHONY: build test\n",
	})
	return dir
}

// golden is a contract's golden file: its digest, its usage and what it
// made of each case.
type golden struct {
	Contract string       `json:"contract"`
	Digest   string       `json:"digest"`
	Usage    []string     `json:"usage"`
	Cases    []goldenCase `json:"cases"`
}

// encode writes g as JSON with one usage line and one case a line.
func (g *golden) encode(t *testing.T) []byte {
	enc := func(v any) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	list := func(n int, item func(int) string) string {
		var lines []string
		for i := range n {
			lines = append(lines, "    "+item(i))
		}
		return "[\n" + strings.Join(lines, ",\n") + "\n  ]"
	}
	return []byte("{\n  \"contract\": " + enc(g.Contract) + ",\n  \"digest\": " + enc(g.Digest) +
		",\n  \"usage\": " + list(len(g.Usage), func(i int) string { return enc(g.Usage[i]) }) +
		",\n  \"cases\": " + list(len(g.Cases), func(i int) string { return enc(g.Cases[i]) }) + "\n}\n")
}

type goldenCase struct {
	Argv  []string `json:"argv"`
	Parse []Arg    `json:"parse,omitempty"`
	Error string   `json:"error,omitempty"`
}

// TestLibrary: each shipped contract decodes, accepts and refuses its
// cases, and gives exactly its golden file (testdata/library; -update
// rewrites them): a change to a contract, its digest or its parses is a
// visible diff.
func TestLibrary(t *testing.T) {
	dir := libraryTree(t)
	names := Library()
	var keys []string
	for k := range libraryCases {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(names, keys) {
		t.Fatalf("library %q, cases for %q", names, keys)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			run(t, c, dir, gitProtected, libraryCases[name])
			g := golden{Contract: name, Digest: c.Digest(), Usage: strings.Split(c.Usage(), "\n")}
			for _, tc := range libraryCases[name] {
				p, err := c.Match(tc.argv, dir, gitProtected)
				gc := goldenCase{Argv: tc.argv}
				if err != nil {
					gc.Error = err.Error()
				} else {
					gc.Parse = p.Args
				}
				g.Cases = append(g.Cases, gc)
			}
			got := g.encode(t)
			file := filepath.Join("testdata", "library", name+".json")
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what the library gives now (go test -run TestLibrary -update to rewrite it after review):\n%s", file, got)
			}
		})
	}
}

func TestBuiltinUnknown(t *testing.T) {
	if c, err := Builtin("rm"); err == nil || c != nil || !strings.Contains(err.Error(), "not in the library") {
		t.Fatalf("Builtin(rm) = %v, %v", c, err)
	}
	if c, err := Builtin("../library/git"); err == nil || c != nil {
		t.Fatalf("Builtin(../library/git) = %v, %v", c, err)
	}
}

// TestLibraryGoIsTheThree: the go contract's test, vet and build
// branches are exactly the grammars of go-test, go-vet and go-build
// after their subcommand. The format cannot share a flag set between
// files, so this keeps the copies from drifting apart.
func TestLibraryGoIsTheThree(t *testing.T) {
	grammar := func(name string) []any {
		t.Helper()
		b, err := library.ReadFile("library/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var c struct{ Argv []any }
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c.Argv
	}
	var branches []string
	for _, b := range grammar("go")[0].(map[string]any)["choice"].([]any) {
		b := b.(map[string]any)
		sub := b["literal"].(string)
		branches = append(branches, sub)
		one := grammar("go-" + sub)
		if want := []any{map[string]any{"literal": sub}}; !reflect.DeepEqual(one[:1], want) || !reflect.DeepEqual(b["then"], one[1:]) {
			t.Errorf("go %s is not go-%s's grammar:\n%v\n%v", sub, sub, b["then"], one[1:])
		}
	}
	if want := []string{"test", "vet", "build"}; !slices.Equal(branches, want) {
		t.Fatalf("go's branches %q, want %q", branches, want)
	}
}
