package seam

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOnlyTestsSetSeams parses every non-test Go file of the module and
// fails if any of them assigns InsecureSkipProbe: production code can
// only read it, so only a test binary can skip the probe.
func TestOnlyTestsSetSeams(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for _, lhs := range as.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "InsecureSkipProbe" {
					t.Errorf("%s assigns seam.InsecureSkipProbe; only _test.go files may", fset.Position(as.Pos()))
				}
				if id, ok := lhs.(*ast.Ident); ok && id.Name == "InsecureSkipProbe" {
					t.Errorf("%s assigns InsecureSkipProbe; only _test.go files may", fset.Position(as.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("parsed only %d files from %s; the check would prove nothing", files, root)
	}
}

// TestProductionBuildHasNoSeams: the broker and brokerd binaries, as
// `make build` builds them, link neither the testing package nor a seam.
func TestProductionBuildHasNoSeams(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "warrant/cmd/broker", "warrant/cmd/brokerd").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "warrant/broker") {
		t.Fatalf("go list -deps printed %d packages, without the broker", len(deps))
	}
	for _, d := range deps {
		if d == "testing" {
			t.Fatal("the production broker links the testing package")
		}
	}
	if on := Active(); len(on) != 0 {
		t.Fatalf("this test binary, built without tags, has seams in force: %v", on)
	}
}
