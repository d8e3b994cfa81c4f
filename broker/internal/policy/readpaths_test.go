package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configured read path that would open the broker's keys, the host's
// other processes or devices, or the whole home directory is refused
// with a sentence naming what it would open; a directory beside them, or
// inside the home directory, is not. A symlinked spelling is the
// directory it names.
func TestCheckReadPathsRefusesWhatTheSandboxKeepsOut(t *testing.T) {
	dir := t.TempDir()
	home, state := filepath.Join(dir, "home"), filepath.Join(dir, "home", "state")
	tools := filepath.Join(home, "go", "pkg")
	for _, d := range []string{state, tools} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(state, link); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"/":                          "the kernel's /proc",
		"/proc":                      "the kernel's /proc",
		"/proc/sys":                  "the kernel's /proc",
		"/sys/fs/cgroup":             "the kernel's /sys",
		"/dev":                       "the kernel's /dev",
		state:                        "the broker's state directory",
		filepath.Join(state, "keys"): "the broker's state directory",
		link:                         "the broker's state directory",
		home:                         "the broker's state directory", // it holds the state directory too
		dir:                          "the broker's state directory",
		tools:                        "",
		"/usr/share":                 "",
	} {
		err := CheckReadPaths([]string{"/usr", p}, home, state)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", p, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p)):
			t.Errorf("%s: %v, want it refused as %s", p, err, want)
		}
	}
	elsewhere := filepath.Join(dir, "state2")
	if err := CheckReadPaths([]string{home}, home, elsewhere); err == nil || !strings.Contains(err.Error(), "the home directory") {
		t.Errorf("the home directory: %v", err)
	}
}
