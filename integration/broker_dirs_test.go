//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// litter fills the action's HOME and TMPDIR with what a target may leave:
// files, a directory it made read-only with a file inside, and a symlink
// to the workspace (argv[1]). It prints HOME.
const litter = `
import os, sys
home, tmp = os.environ["HOME"], os.environ["TMPDIR"]
for d in (home, tmp):
    with open(os.path.join(d, "f"), "w") as f: f.write("x")
os.makedirs(os.path.join(home, "ro", "deep"))
with open(os.path.join(home, "ro", "deep", "f"), "w") as f: f.write("x")
os.chmod(os.path.join(home, "ro"), 0o500)
os.symlink(sys.argv[1], os.path.join(home, "ws"))
print(home)
`

// TestBrokerRemovesActionDirs: once an action has a known outcome, its
// private HOME and TMPDIR are gone from the state directory with all the
// target left in them, and the workspace a planted symlink points to is
// untouched (removal never follows it).
func TestBrokerRemovesActionDirs(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	canary := filepath.Join(a.WS, "canary")
	if err := os.WriteFile(canary, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, r := a.Run(a.request(wire.ProfileShort, python(t), "-c", litter, a.WS))
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("the target must exit 0: %s %+v\n%s", r.Outcome, r.Error, r.Stderr.Text)
	}
	dir := filepath.Join(d.State, "actions", h)
	if home := strings.TrimSpace(r.Stdout.Text); home != filepath.Join(dir, "home") {
		t.Fatalf("the target's HOME was %q, want it under %s", home, dir)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("the private directories of a finished action are still there: %v", err)
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "keep" {
		t.Fatalf("the workspace behind the planted symlink changed: %q, %v", b, err)
	}
}
