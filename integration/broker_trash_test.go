//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// modeZeroHome is what reproduction 8 left behind: a tree in the
// action's HOME with a mode-0 directory holding 4 MiB, under a parent
// made read-only (each chmod performed by the broker).
const modeZeroHome = `set -e
mkdir -p "$HOME/a/b/c"
head -c 4194304 /dev/zero > "$HOME/a/b/c/blob"
touch "$HOME/a/b/file"
chmod 0 "$HOME/a/b/c" "$HOME/a/b"
chmod 0500 "$HOME/a"
`

// TestBrokerTrashRemovedWhateverModesAsUser: issue 31, reproduction 8,
// as uid 65534. A target that leaves a mode-0 directory tree in its HOME
// leaves nothing in <state>/actions once `broker run` is over. A trash
// directory whose removal fails (a root-owned directory planted in it,
// which uid 65534 cannot empty) is named, with the error, by `broker
// status` and its --json; it is retried at the next start, and once the
// obstacle is gone that start removes it and status names nothing.
func TestBrokerTrashRemovedWhateverModesAsUser(t *testing.T) {
	u := asNobody(t)
	res := u.run("/bin/sh", "-c", modeZeroHome)
	if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("the target: %s %v %+v\n%s", res.Outcome, res.ExitCode, res.Error, res.Stderr.Text)
	}
	actions := filepath.Join(u.home, "state", "actions")
	if left := entries(t, actions); len(left) != 0 {
		t.Fatalf("after the run, %s holds %v", actions, left)
	}

	planted := filepath.Join(actions, "trash-planted")
	obstacle := filepath.Join(planted, "root-owned")
	if err := os.MkdirAll(obstacle, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(obstacle, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, nobody, nobody); err != nil { // the trash is the user's; what is in it is root's
		t.Fatal(err)
	}
	if res := u.run("/bin/true"); res.Outcome != "exited" {
		t.Fatalf("a run with the planted trash: %s %+v", res.Outcome, res.Error)
	}
	if _, err := os.Stat(filepath.Join(obstacle, "f")); err != nil {
		t.Fatalf("uid %d removed a root-owned file: %v", nobody, err)
	}
	text := u.readCLI("status")
	if !strings.Contains(text, planted) || !strings.Contains(text, "permission denied") {
		t.Errorf("broker status does not name the trash it could not remove:\n%s", text)
	}
	if got := unremovedJSON(t, u.readCLI("status", "--json")); len(got) != 1 || got[0].Path != planted || !strings.Contains(got[0].Error, "permission denied") {
		t.Errorf("broker status --json: unremoved %+v, want %s with its error", got, planted)
	}

	if err := os.Chown(obstacle, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if res := u.run("/bin/true"); res.Outcome != "exited" {
		t.Fatalf("the next run: %s %+v", res.Outcome, res.Error)
	}
	if left := entries(t, actions); len(left) != 0 {
		t.Fatalf("the next start did not remove the trash: %s holds %v", actions, left)
	}
	if got := unremovedJSON(t, u.readCLI("status", "--json")); got == nil || len(got) != 0 {
		t.Errorf("broker status --json after the removal: unremoved %+v, want []", got)
	}
	if text := u.readCLI("status"); strings.Contains(text, "trash-") {
		t.Errorf("broker status still names trash:\n%s", text)
	}
}

// unremovedEntry is one entry of the capability object's unremoved.
type unremovedEntry struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

func unremovedJSON(t *testing.T, out string) []unremovedEntry {
	t.Helper()
	var c struct {
		Unremoved []unremovedEntry `json:"unremoved"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("decode status --json: %v\n%s", err, out)
	}
	return c.Unremoved
}

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
