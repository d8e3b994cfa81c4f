package aliasscan

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkAliasScan measures the scan of a 100,000-file tree (2,000
// directories of 50 files, 1 in 50 of them a hard link to a sibling, as
// a local clone's objects are) interleaved with `find DIR -type f` on the
// same tree in the same loop, and reports both and their ratio. find
// reads file types from getdents and stats nothing; the scan must stat
// every name for its link count, so the ratio is the price of that.
// "1k-files" is the cost Submit adds to each launch: Check on a
// 1,000-file workspace.
func BenchmarkAliasScan(b *testing.B) {
	b.Run("100k-files", func(b *testing.B) {
		find, err := exec.LookPath("find")
		if err != nil {
			b.Skip("skip: find is not installed, so there is no baseline")
		}
		root := b.TempDir()
		buildTree(b, root, 50, 40, 50)
		f := openRoot(b, root)
		var scanned, found time.Duration
		runs := 0
		for b.Loop() {
			start := time.Now()
			res, err := Scan(f, farDeadline())
			scanned += time.Since(start)
			if err != nil || res.Files != 100_000 || len(res.Aliased) != 0 {
				b.Fatalf("scan = %+v, %v", res, err)
			}
			start = time.Now()
			out, err := exec.Command(find, root, "-type", "f").Output()
			found += time.Since(start)
			if n := bytes.Count(out, []byte{'\n'}); err != nil || n != 100_000 {
				b.Fatalf("find printed %d files: %v", n, err)
			}
			runs++
		}
		scanNs := float64(scanned.Nanoseconds()) / float64(runs)
		findNs := float64(found.Nanoseconds()) / float64(runs)
		b.ReportMetric(scanNs, "scan-ns/op")
		b.ReportMetric(findNs, "find-ns/op")
		b.ReportMetric(scanNs/findNs, "scan/find")
	})
	b.Run("1k-files", func(b *testing.B) {
		root := b.TempDir()
		buildTree(b, root, 4, 5, 50)
		f := openRoot(b, root)
		for b.Loop() {
			if res, err := Check(f); err != nil || res.Files != 1_000 {
				b.Fatalf("check = %+v, %v", res, err)
			}
		}
	})
}

// buildTree makes top × sub directories of files empty files each beneath
// root; every 50th file is a hard link to the file before it.
func buildTree(b *testing.B, root string, top, sub, files int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, top)
	for i := range top {
		wg.Go(func() {
			for j := range sub {
				dir := filepath.Join(root, fmt.Sprintf("t%02d", i), fmt.Sprintf("s%02d", j))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					errs <- err
					return
				}
				for k := range files {
					p := filepath.Join(dir, fmt.Sprintf("f%03d", k))
					var err error
					if k%50 == 49 {
						err = os.Link(filepath.Join(dir, fmt.Sprintf("f%03d", k-1)), p)
					} else {
						err = os.WriteFile(p, nil, 0o644)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
