//go:build linux

package integration

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"warrant/wire"
)

// TestCLIListingsAndCard drives a real daemon with the real CLI (issue 18
// item 8): the approval card fits in 20 lines and names the --state its
// decide commands need, --full adds the identity numbers; `leases` shows
// the command a lease allows and its uses left and hides it once spent
// unless --all; `broker run` says which lease it used and what is left,
// in words and in --json; `actions` shows the quoted command, outcome,
// exit code and age.
func TestCLIListingsAndCard(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	req := wire.ActionRequest{Executable: "sh", Argv: []string{"-c", "exit 3", "a b"}, Cwd: ".", Profile: wire.ProfileShort}
	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v %v", s, err)
	}
	id := s.Approval.ID

	card, code := d.CLI("approvals")
	lines := strings.Split(strings.TrimRight(card, "\n"), "\n")
	if code != 0 || len(lines) > 20 {
		t.Errorf("broker approvals: exit %d, %d lines (want at most 20):\n%s", code, len(lines), card)
	}
	joined := strings.ReplaceAll(card, " \\\n      ", " ") // a long command continues on the next row
	for _, want := range []string{"command      sh -c 'exit 3' 'a b'", "/usr/bin/dash", "runs as      uid ",
		"no network", "broker approve " + id + " --state " + d.State + " [--uses N]", "broker deny " + id + " --state " + d.State} {
		if !strings.Contains(joined, want) {
			t.Errorf("the card lacks %q:\n%s", want, card)
		}
	}
	numbers := regexp.MustCompile(`\bino \d+|ctime |fingerprint  [0-9a-f]{64}|policy       sha256 [0-9a-f]{64}|\[2\] "exit 3"`)
	if m := numbers.FindString(card); m != "" {
		t.Errorf("the short card shows the identity number %q", m)
	}
	full, _ := d.CLI("approvals", "--full")
	if got := len(numbers.FindAllString(full, -1)); got < 5 {
		t.Errorf("broker approvals --full shows %d of the identity numbers:\n%s", got, full)
	}

	if out, code := d.CLI("approve", id, "--uses", "2", "--ttl", "10m"); code != 0 {
		t.Fatalf("approve: exit %d %s", code, out)
	}
	leases, _ := d.CLI("leases")
	if !strings.Contains(leases, "2 use(s) left") || !strings.Contains(leases, "sh -c 'exit 3' 'a b'") || !strings.Contains(leases, "profile short") {
		t.Errorf("broker leases does not show the command, its uses left and its profile:\n%s", leases)
	}

	// The daemon runs it: the JSON names the lease and the one use left,
	// the summary line says so too.
	run := []string{"run", "--workspace", a.WS, "--json", "--", "sh", "-c", "exit 3", "a b"}
	out, code := d.CLI(run...)
	var ran struct {
		Handle   string  `json:"handle"`
		Lease    *string `json:"lease"`
		UsesLeft *uint32 `json:"uses_left"`
	}
	if err := json.Unmarshal([]byte(out), &ran); err != nil || code != 3 || ran.Lease == nil || !strings.HasPrefix(*ran.Lease, "l-") ||
		ran.UsesLeft == nil || *ran.UsesLeft != 1 {
		t.Fatalf("broker run --json: exit %d, %s (%v); want exit 3 with the lease and 1 use left", code, out, err)
	}
	_, stderr, code := cliRun(t, a.WS, nil, "run", "--state", d.State, "--", "sh", "-c", "exit 3", "a b")
	if code != 3 || !strings.Contains(stderr, "· lease "+*ran.Lease+", 0 use(s) left") {
		t.Errorf("broker run: exit %d; the summary does not name the lease and its uses left:\n%s", code, stderr)
	}

	// Spent, it is hidden unless --all.
	if leases, _ := d.CLI("leases"); strings.Contains(leases, *ran.Lease) || !strings.Contains(leases, "--all lists them") {
		t.Errorf("broker leases lists the spent lease:\n%s", leases)
	}
	if leases, _ := d.CLI("leases", "--all"); !strings.Contains(leases, *ran.Lease) || !strings.Contains(leases, "used up") {
		t.Errorf("broker leases --all does not list the spent lease:\n%s", leases)
	}
	out, _ = d.CLI("leases", "--json")
	if listed := wholeListing[struct {
		ID string `json:"id"`
	}](t, "leases", out); len(listed) != 0 {
		t.Errorf("broker leases --json lists spent leases: %s", out)
	}

	actions, _ := d.CLI("actions")
	row := regexp.MustCompile(regexp.QuoteMeta(ran.Handle) + `  exited +exit 3 +\d+[smhd] ago  sh -c 'exit 3' 'a b'\n`)
	if !row.MatchString(actions) {
		t.Errorf("broker actions does not show %s's outcome, exit code, age and quoted command:\n%s", ran.Handle, actions)
	}
}

// TestCLIRunSaysOnceWhatACrashLeftUnknown: after a broker dies with an
// action in flight, the next `broker run` (embedded) says, once, that an
// action's outcome is unknown and where to look; the run after it does
// not repeat it.
func TestCLIRunSaysOnceWhatACrashLeftUnknown(t *testing.T) {
	d, a, mark := markedAgent(t)
	starts := filepath.Join(a.WS, "starts")
	h := a.Start(a.request(wire.ProfileShort, python(t), "-c", startsThenSleeps, starts, mark), 1)
	a.awaitRunning(h, starts, 4)
	d.kill()
	orphans := marked(t, mark)
	t.Cleanup(func() { removeCgroupOf(t, orphans) })

	want := "1 action(s) were in flight when the previous broker on " + d.State + " stopped"
	_, stderr, code := cliRun(t, a.WS, nil, "run", "--approve", "--state", d.State, "--", "true")
	if code != 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "broker actions --unknown --state "+d.State) ||
		!strings.Contains(stderr, "broker resolve HANDLE success|failed|stop") {
		t.Fatalf("the first run after the crash: exit %d, does not say %q and where to look:\n%s", code, want, stderr)
	}
	_, stderr, code = cliRun(t, a.WS, nil, "run", "--approve", "--state", d.State, "--", "true")
	if code != 0 || strings.Contains(stderr, "in flight") {
		t.Fatalf("the second run: exit %d, repeats the notice:\n%s", code, stderr)
	}
}
