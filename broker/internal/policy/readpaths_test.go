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
		"/":                          "/ holds the broker's state directory",
		"/proc":                      "/proc is /proc (the host's other processes)",
		"/proc/sys":                  "/proc/sys lies inside /proc",
		"/sys/fs/cgroup":             "/sys/fs/cgroup lies inside /sys",
		"/dev":                       "/dev is /dev (the host's devices)",
		state:                        state + " is the broker's state directory",
		filepath.Join(state, "keys"): "lies inside the broker's state directory",
		link:                         link + " is the broker's state directory",
		home:                         home + " holds the broker's state directory",
		dir:                          dir + " holds the broker's state directory",
		tools:                        "",
		"/usr/share":                 "",
	} {
		err := CheckReadPaths([]string{"/usr", p}, home, state)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", p, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "configured read path "+p)):
			t.Errorf("%s: %v, want it refused: %s", p, err, want)
		}
	}
	elsewhere := filepath.Join(t.TempDir(), "state")
	for p, how := range map[string]string{home: "is", dir: "holds"} {
		if err := CheckReadPaths([]string{p}, home, elsewhere); err == nil || !strings.Contains(err.Error(), how+" the home directory "+home) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := CheckReadPaths([]string{tools}, home, elsewhere); err != nil {
		t.Errorf("a directory inside the home directory: %v", err)
	}
}
