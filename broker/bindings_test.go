package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// withBindingsFile writes <state>/bindings with content and perm.
func withBindingsFile(t *testing.T, content string, perm os.FileMode) func(*Config) {
	return func(c *Config) {
		must(t, os.MkdirAll(c.StateDir, 0o700))
		p := filepath.Join(c.StateDir, "bindings")
		must(t, os.WriteFile(p, []byte(content), perm))
		must(t, os.Chmod(p, perm))
	}
}

// TestBindingInPlaceByDefault: every executable runs in place unless the
// operator says otherwise; the rig's tool is a copy of /bin/true, an ELF
// that is not Go and has no $ORIGIN (which once chose the sealed
// snapshot). Its request, and the lease the operator grants, are for the
// in-place identity, and the launch asks for it.
func TestBindingInPlaceByDefault(t *testing.T) {
	r := newRig(t)
	v, _ := r.approved(r.request(), 1)
	if v.Identity.Binding != wire.InPlace {
		t.Fatalf("the request's binding is %s, want in-place", v.Identity.Binding)
	}
	r.wantAccepted(r.request())
	if got := r.exec.launched[0].Binding; got != wire.InPlace {
		t.Fatalf("the launch's binding is %s, want in-place", got)
	}
}

// TestBindingsFileSealed: an executable <state>/bindings lists — by its
// real path or by a symlink that leads to it — defaults to the sealed
// snapshot; the request shows it, and the lease granted for it launches
// sealed. An executable it does not list still runs in place.
func TestBindingsFileSealed(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "tool-link")
	other := filepath.Join(dir, "other")
	r := newRig(t, func(c *Config) {
		tool := filepath.Join(filepath.Dir(c.StateDir), "bin", "tool") // the rig's r.tool
		must(t, os.Symlink(tool, link))
		withBindingsFile(t, "# sealed by default\n\n"+tool+"\n"+link+"\n", 0o600)(c)
	})
	copyFile(t, "/bin/true", other)
	for _, exe := range []string{r.tool, link} {
		req := r.request()
		req.Executable = exe
		v, _ := r.approved(req, 1)
		if v.Identity.Binding != wire.SealedSnapshot {
			t.Fatalf("%s: the request's binding is %s, want the sealed snapshot <state>/bindings names", exe, v.Identity.Binding)
		}
		r.wantAccepted(req)
		if got := r.exec.launched[len(r.exec.launched)-1].Binding; got != wire.SealedSnapshot {
			t.Fatalf("%s: the launch's binding is %s, want sealed-snapshot", exe, got)
		}
	}
	req := r.request()
	req.Executable = other
	s := r.submit(req)
	if s.Approval == nil {
		t.Fatalf("an executable the file does not list: accepted %s without an approval", s.Handle)
	}
	if got := s.Approval.Identity.Binding; got != wire.InPlace {
		t.Fatalf("an executable the file does not list: binding %s, want in-place", got)
	}
	// The operator may still pin the other binding for one approval.
	if _, err := r.cl.ApproveBinding(s.Approval.ID, 1, time.Hour, wire.SealedSnapshot); err != nil {
		t.Fatal(err)
	}
	r.wantAccepted(req)
	if got := r.exec.launched[len(r.exec.launched)-1].Binding; got != wire.SealedSnapshot {
		t.Fatalf("pinned by approve --binding: launched %s, want sealed-snapshot", got)
	}
}

// TestBindingsFileRefusedAtStart: every malformed line of <state>/bindings
// (named by its number), and an unsafe file, stops the broker with a
// sentence; an absent or empty file lists nothing.
func TestBindingsFileRefusedAtStart(t *testing.T) {
	open := func(file string, perm os.FileMode) error {
		state := filepath.Join(t.TempDir(), "state")
		withBindingsFile(t, file, perm)(&Config{StateDir: state})
		b, err := Open(context.Background(), Config{StateDir: state})
		if err == nil {
			b.Close()
		}
		return err
	}
	for _, c := range []struct {
		file string
		perm os.FileMode
		want string
	}{
		{"usr/bin/node\n", 0o600, "bindings line 1: usr/bin/node is not an absolute path"},
		{"/usr/bin/../bin/node\n", 0o600, "bindings line 1: /usr/bin/../bin/node is not a clean path; write /usr/bin/node"},
		{"/usr/bin/\n", 0o600, "not a clean path"},
		{"# c\n/usr/bin/node \n", 0o600, "bindings line 2: ends in a blank"},
		{" /usr/bin/node\n", 0o600, "not an absolute path"},
		{"/usr/bin/node\r\n", 0o600, "carriage return"},
		{"/usr/bin/node\n/usr/bin/node\n", 0o600, "line 2: /usr/bin/node is listed already on line 1"},
		{"/usr/bin/no\x00de\n", 0o600, "control character"},
		{"/usr/bin/no\x1bde\n", 0o600, "control character"},
		{"/usr/bin/node\t\n", 0o600, "control character"},
		{"sealed-snapshot /usr/bin/node\n", 0o600, "not an absolute path"},
		{"/" + strings.Repeat("a", 5000) + "\n", 0o600, "longer than"},
		{strings.Repeat("/usr/bin/node"+strings.Repeat("x", 100)+"\n", 700), 0o600, "larger than"},
		{"/usr/bin/node\n", 0o620, "writable by others"},
	} {
		err := open(c.file, c.perm)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("file %.60q mode %v: %v; want an error with %q", c.file, c.perm, err, c.want)
		}
	}
	for _, ok := range []string{"", "\n  \n# only comments\n", "/usr/bin/node\n/opt/tool/bin/tool"} {
		if err := open(ok, 0o600); err != nil {
			t.Errorf("file %q: %v; want it accepted", ok, err)
		}
	}
	state := filepath.Join(t.TempDir(), "state")
	must(t, os.MkdirAll(state, 0o700))
	must(t, os.Symlink("/etc/hostname", filepath.Join(state, "bindings")))
	if _, err := Open(context.Background(), Config{StateDir: state}); err == nil || !strings.Contains(err.Error(), "bindings") {
		t.Errorf("a symlinked bindings file: %v", err)
	}
}
