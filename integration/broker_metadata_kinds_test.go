//go:build linux

package integration

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// metaKinds changes the mode, times and owner of each of its arguments
// and prints "NAME_call ok" or "NAME_call ERRNO" for each.
const metaKinds = pyAttempt + `
import os, sys, errno
for p in sys.argv[1:]:
    attempt(p + "_chmod", lambda: os.chmod(p, 0o666))
    attempt(p + "_utime", lambda: os.utime(p, (946684800, 946684800)))
    attempt(p + "_chown", lambda: os.chown(p, os.getuid(), os.getgid()))
`

// TestBrokerMetadataActsOnlyOnFilesDirectoriesAndLinks: issue 31,
// reproduction 6 (the metadata server's half). The broker changes the
// metadata of regular files, directories and symlinks only: a device node
// (/dev/null's numbers, 0600, root's) and a FIFO in the workspace keep
// their mode, times and owner whatever the target calls, and so do a
// device node and a FIFO outside reached through hard links in the
// workspace, which admission refuses before anything runs; a regular
// file beside them is changed and read back.
func TestBrokerMetadataActsOnlyOnFilesDirectoriesAndLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: needs root to make a device node")
	}
	d := shared(t)
	py := python(t)
	makeKinds := func(dir string) {
		t.Helper()
		if err := unix.Mknod(filepath.Join(dir, "dev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("inside", func(t *testing.T) {
		a := d.newAgent(t)
		makeKinds(a.WS)
		if err := os.WriteFile(filepath.Join(a.WS, "file"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		objects := []string{filepath.Join(a.WS, "dev"), filepath.Join(a.WS, "fifo")}
		before := map[string]metaStat{}
		for _, p := range objects {
			before[p] = statMeta(t, p)
		}
		h, r := a.Run(a.request(wire.ProfileShort, py, "-c", metaKinds, "dev", "fifo", "file"))
		if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("the target must run to its end: %s %+v\n%s\n%s", r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
		}
		got := attempts(r.Stdout.Text)
		for _, k := range []string{"dev", "fifo"} {
			for _, c := range []string{"_chmod", "_utime", "_chown"} {
				if got[k+c] != "EPERM" {
					t.Errorf("%s: %q, want EPERM", k+c, got[k+c])
				}
			}
		}
		for _, c := range []string{"_chmod", "_utime", "_chown"} {
			if got["file"+c] != "ok" {
				t.Errorf("file%s: %q, want ok", c, got["file"+c])
			}
		}
		for _, p := range objects {
			if after := statMeta(t, p); after != before[p] {
				t.Errorf("%s changed: %+v -> %+v", p, before[p], after)
			}
		}
		if f := statMeta(t, filepath.Join(a.WS, "file")); f.mode&0o7777 != 0o666 || f.mtime.Sec != 946684800 {
			t.Errorf("the regular file reads back as mode %o mtime %d, want 0666 946684800", f.mode&0o7777, f.mtime.Sec)
		}
		if m := d.Receipt(h).Metadata; m == nil || m.Performed != 3 || m.Refused != 6 {
			t.Errorf("the receipt counts metadata calls %+v, want 3 performed and 6 refused", m)
		}
	})

	t.Run("linked from outside", func(t *testing.T) {
		a := d.newAgent(t)
		out := filepath.Join(filepath.Dir(a.WS), "outside")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		makeKinds(out)
		objects := []string{filepath.Join(out, "dev"), filepath.Join(out, "fifo")}
		before := map[string]metaStat{}
		for _, p := range objects {
			mustLink(t, p, filepath.Join(a.WS, filepath.Base(p)))
		}
		for _, p := range objects { // after the links: they change ctime
			before[p] = statMeta(t, p)
		}
		req := a.request(wire.ProfileShort, py, "-c", metaKinds, "dev", "fifo")
		s, err := a.cl.Submit(a.WS, req)
		if err == nil && s.Approval != nil {
			if _, err = a.cl.Approve(s.Approval.ID, 1, time.Hour); err != nil {
				t.Fatal(err)
			}
			s, err = a.cl.Submit(a.WS, req)
		}
		var we *wire.Error
		switch {
		case errors.As(err, &we) && we.Code == wire.CodeWorkspaceAliased:
			t.Logf("admission refused the workspace: %s", we.Message)
		case err != nil:
			t.Fatalf("submit: %v", err)
		default: // the server's own refusal of such objects: TestServerActsInTheCallersView
			t.Fatalf("admission let a workspace holding hard links to a device and a FIFO outside run (handle %q)", s.Handle)
		}
		for _, p := range objects {
			if after := statMeta(t, p); after != before[p] {
				t.Errorf("%s changed: %+v -> %+v", p, before[p], after)
			}
		}
	})
}
