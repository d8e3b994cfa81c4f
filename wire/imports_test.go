package wire

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoUnsafeOrSysImports parses the non-test Go files of wire/ and
// receipt/ (subpackages included), and of every package of this module
// they import, directly or not, and refuses any import of unsafe or of
// golang.org/x/sys. It parses rather than builds, so it holds while a
// package is half-written, and it reads every platform's files.
func TestNoUnsafeOrSysImports(t *testing.T) {
	const module = "warrant/"
	checked := map[string]bool{}
	var check func(dir string, recursive bool)
	check = func(dir string, recursive bool) {
		if checked[dir] {
			return
		}
		checked[dir] = true
		files := 0
		var deps []string
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != dir && (!recursive || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			files++
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					return err
				}
				if p == "unsafe" || p == "golang.org/x/sys" || strings.HasPrefix(p, "golang.org/x/sys/") {
					t.Errorf("%s imports %s", path, p)
				}
				if strings.HasPrefix(p, module) {
					deps = append(deps, filepath.Join("..", strings.TrimPrefix(p, module)))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
		if files == 0 {
			t.Fatalf("%s: no Go files found; the check would prove nothing", dir)
		}
		for _, d := range deps {
			check(d, false)
		}
	}
	check(filepath.Join("..", "wire"), true)
	check(filepath.Join("..", "receipt"), true)
	if dep := filepath.Join("..", "internal", "closed"); !checked[dep] {
		t.Errorf("wire's import of %s was not followed; the walk of imports proves nothing", dep)
	}
}
