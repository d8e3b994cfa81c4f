package fuzz

import (
	"bytes"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFuzzCorporaNotEmpty finds every fuzz target in this package, the
// ones below it and the broker's (broker/internal/identity, the env
// and bindings files' and the git identity's in broker/internal/admission,
// the goal document's in broker/internal/goals, the git
// config's in broker/internal/protect, the toolchain markers' in
// broker/internal/toolchain, the program contract's in
// broker/internal/contract) by parsing
// their _test.go files (any func FuzzX(*testing.F))
// and requires a committed seed corpus for each: testdata/fuzz/FuzzX/
// beside the file, holding at least one file in the "go test fuzz v1"
// format. A target added without seeds fails here.
func TestFuzzCorporaNotEmpty(t *testing.T) {
	here, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	below, err := filepath.Glob("*/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	broker, err := filepath.Glob("../broker/internal/identity/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	admission, err := filepath.Glob("../broker/internal/admission/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	goals, err := filepath.Glob("../broker/internal/goals/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	protect, err := filepath.Glob("../broker/internal/protect/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	toolchain, err := filepath.Glob("../broker/internal/toolchain/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := filepath.Glob("../broker/internal/contract/*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	broker = append(append(append(append(append(broker, admission...), goals...), protect...), toolchain...), contract...)
	files := append(append(here, below...), broker...)
	targets := map[string]string{} // name -> its corpus directory
	fset := gotoken.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") && takesTestingF(fn) {
				targets[fn.Name.Name] = filepath.Join(filepath.Dir(path), "testdata", "fuzz", fn.Name.Name)
			}
		}
	}
	if len(broker) == 0 || len(targets) == 0 {
		t.Fatal("no fuzz targets found here or in the broker; the check would prove nothing")
	}
	for _, want := range []string{"FuzzBrokerAdmit", "FuzzBrokerShebang", "FuzzDeclaredEnvFile", "FuzzGoalDecode", "FuzzGitConfig", "FuzzToolchainMarkers", "FuzzContract"} {
		if targets[want] == "" {
			t.Errorf("the broker's fuzz target %s was not found", want)
		}
	}
	for name, dir := range targets {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Errorf("%s: no seed corpus: %v", name, err)
			continue
		}
		seeds := 0
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte("go test fuzz v1\n")) {
				t.Errorf("%s/%s: not a go test fuzz v1 file", dir, e.Name())
				continue
			}
			seeds++
		}
		if seeds == 0 {
			t.Errorf("%s: seed corpus %s is empty", name, dir)
		}
	}
}

// takesTestingF reports whether fn has the one parameter *testing.F.
func takesTestingF(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testing" && sel.Sel.Name == "F"
}
