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
// receipt/ (subpackages included) and refuses any import of unsafe or of
// golang.org/x/sys. It parses rather than builds, so it holds while a
// package is half-written.
func TestNoUnsafeOrSysImports(t *testing.T) {
	for _, dir := range []string{".", "../receipt"} {
		files := 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
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
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
		if files == 0 {
			t.Fatalf("%s: no Go files found; the check would prove nothing", dir)
		}
	}
}
