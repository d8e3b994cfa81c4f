//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// `broker approvals --watch` (issue 33, item 4), typed at on a
// pseudo-terminal (pty_test.go) while `broker run`s off any terminal wait
// for its decisions; and `broker approvals` listing the same requests in
// text and in JSON.

// watchKeys ends the line the watch queue shows under the request it
// asks about.
const watchKeys = "q quit > "

// watchGrace is longer than the time a question about a request the
// watch has not asked about before, or a contract offer, takes no key
// (readGrace in broker/cli/watch_keys.go): no one has read it yet.
const watchGrace = 600 * time.Millisecond

// waiting is a `broker run --json` off any terminal (stdin /dev/null)
// that waits for its approval request to be decided elsewhere.
type waiting struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	id             string // its approval request
	done           chan struct{}
}

var approvalRequired = regexp.MustCompile(`approval required: request (ar-[0-9a-f]+)`)

// runWaiting starts `broker run --json` of argv against d in workspace
// ws and returns once it has named its approval request.
func runWaiting(t *testing.T, d *brokerd, ws string, argv ...string) *waiting {
	t.Helper()
	w := startRun(t, d, ws, argv...)
	for deadline := time.Now().Add(daemonSafety); w.id == ""; time.Sleep(10 * time.Millisecond) {
		if m := approvalRequired.FindStringSubmatch(w.stderr.String()); m != nil {
			w.id = m[1]
			continue
		}
		select {
		case <-w.done:
			t.Fatalf("broker run %q exited (%v) before asking for approval:\n%s%s", argv, w.cmd.ProcessState, w.stdout, w.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker run %q never asked for approval:\n%s", argv, w.stderr)
		}
	}
	return w
}

// startRun starts `broker run --json` of argv against d in workspace ws,
// off any terminal.
func startRun(t *testing.T, d *brokerd, ws string, argv ...string) *waiting {
	t.Helper()
	w := &waiting{t: t, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(bins.broker, append([]string{"run", "--json", "--state", d.State, "--workspace", ws, "--"}, argv...)...)
	w.cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	w.cmd.Stdout, w.cmd.Stderr = w.stdout, w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() { w.cmd.Process.Kill(); <-w.done })
	return w
}

// ranObject is what the tests below read of `broker run --json`.
type ranObject struct {
	Handle   *string `json:"handle"`
	Outcome  string  `json:"outcome"`
	Lease    *string `json:"lease"`
	UsesLeft *uint32 `json:"uses_left"`
	Contract *string `json:"contract"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ran waits for the run to exit with status want and returns its JSON
// object.
func (w *waiting) ran(want int) ranObject {
	w.t.Helper()
	select {
	case <-w.done:
	case <-time.After(daemonSafety):
		w.t.Fatalf("broker run did not exit:\n%s", w.stderr)
	}
	if code := w.cmd.ProcessState.ExitCode(); code != want {
		w.t.Fatalf("broker run: exit %d, want %d:\n%s\n%s", code, want, w.stdout, w.stderr)
	}
	var o ranObject
	if err := json.Unmarshal([]byte(w.stdout.String()), &o); err != nil {
		w.t.Fatalf("broker run --json printed no object: %v\n%s", err, w.stdout)
	}
	return o
}

// awaitFrom waits until the terminal has shown want after its first
// from bytes, and returns how much it has shown then.
func (p *ptyRun) awaitFrom(from int, want string) int {
	p.t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for {
		s := p.out.String()
		if i := strings.Index(s[from:], want); i >= 0 {
			return from + i + len(want)
		}
		select {
		case <-p.exited:
			<-p.read
			if s := p.out.String(); strings.Contains(s[from:], want) {
				return len(s)
			}
			p.t.Fatalf("broker exited (%v) before showing %q:\n%s", p.cmd.ProcessState, want, s[from:])
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the terminal never showed %q:\n%s", want, s[from:])
		}
	}
}

// answer types keys once the question on the screen could have been
// read: watchGrace after it appeared.
func (p *ptyRun) answer(keys string) {
	p.t.Helper()
	time.Sleep(watchGrace)
	p.typeKeys(keys)
}

// cooked reports whether the terminal is in its ordinary mode: line
// editing, echo and signals (read on the master side, which shares the
// terminal's settings).
func (p *ptyRun) cooked() bool {
	p.t.Helper()
	tio, err := unix.IoctlGetTermios(int(p.master.Fd()), unix.TCGETS)
	if err != nil {
		p.t.Fatal(err)
	}
	const want = unix.ICANON | unix.ECHO | unix.ISIG
	return tio.Lflag&want == want
}

// watchRig is a daemon, a workspace, and `broker approvals --watch` on a
// terminal, showing its (empty) queue.
type watchRig struct {
	promptRig
	w *ptyRun
}

func newWatchRig(t *testing.T) *watchRig {
	r := &watchRig{promptRig: *newPromptRig(t)}
	r.w = r.watch(t)
	return r
}

func (r *watchRig) watch(t *testing.T) *ptyRun {
	w := startPTY(t, "approvals", "--watch", "--state", r.d.State)
	w.await("Watching")
	if w.cooked() {
		t.Fatalf("broker approvals --watch left the terminal in line mode:\n%s", w.out)
	}
	return w
}

// appending is a command that appends a line to the workspace's marker.
func appending(line string) []string {
	return []string{"/bin/sh", "-c", "echo " + line + " >> marker"}
}

// A request appears on the queue as it arrives; `3` Enter grants it
// three uses: the run completes on the lease, which has two left, as the
// broker lists it. q ends the watch and gives the terminal back.
func TestApprovalsWatchGrantsUses(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newWatchRig(t)
	run := runWaiting(t, r.d, r.ws, appending("ran")...)
	at := r.w.awaitFrom(0, run.id)
	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("3\r")
	o := run.ran(0)
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q, %v; want the command's output", b, err)
	}
	if o.Lease == nil || o.UsesLeft == nil || *o.UsesLeft != 2 {
		t.Fatalf("broker run --json names lease %v with %v uses left, want 2", o.Lease, o.UsesLeft)
	}
	out, code := r.d.CLI("leases", "--json")
	leases := wholeListing[struct {
		ID         string `json:"id"`
		ApprovalID string `json:"approval_id"`
		UsesLeft   uint32 `json:"uses_left"`
	}](t, "leases", out)
	if code != 0 || len(leases) != 1 || leases[0].ApprovalID != run.id || leases[0].UsesLeft != 2 || leases[0].ID != *o.Lease {
		t.Fatalf("broker leases --json: exit %d, want the one lease of %s with 2 uses left:\n%s", code, run.id, out)
	}
	r.w.awaitFrom(at, "granted 3 use(s)")
	r.w.typeKeys("q")
	r.w.wantExit(0, "after q")
	if !r.w.cooked() {
		t.Fatalf("broker approvals --watch did not give the terminal back in line mode")
	}
}

// n asks for a reason and denies: the run ends APPROVAL_DENIED with the
// reason, and nothing ran. A request decided elsewhere leaves the queue
// with a note; s skips to the next; Ctrl-C ends the watch and gives the
// terminal back.
func TestApprovalsWatchDenies(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newWatchRig(t)
	first := runWaiting(t, r.d, r.ws, appending("first")...)
	at := r.w.awaitFrom(0, first.id)
	second := runWaiting(t, r.d, r.ws, appending("second")...)
	at = r.w.awaitFrom(at, second.id)

	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("s") // the first stays pending; the second is asked about
	at = r.w.awaitFrom(at, "Skipped "+first.id)
	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("n")
	at = r.w.awaitFrom(at, "Deny "+second.id+"; the reason")
	r.w.typeKeys("not this one\r")
	o := second.ran(exitNotExecuted)
	if o.Error == nil || o.Error.Code != "APPROVAL_DENIED" || !strings.Contains(o.Error.Message, "not this one") {
		t.Fatalf("broker run of the denied request: %+v", o.Error)
	}
	at = r.w.awaitFrom(at, second.id+": denied (not this one)")

	if out, code := r.d.CLI("approve", first.id); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", first.id, code, out)
	}
	first.ran(0)
	r.w.awaitFrom(at, first.id+" was approved elsewhere")
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "first\n" {
		t.Fatalf("marker %q, %v; want only the approved command's output", b, err)
	}
	r.w.typeKeys("\x03")
	r.w.wantExit(0, "after Ctrl-C")
	if !r.w.cooked() {
		t.Fatalf("broker approvals --watch did not give the terminal back after Ctrl-C")
	}

	// Ended by a signal, it gives the terminal back too.
	w := r.watch(t)
	w.cmd.Process.Signal(syscall.SIGTERM)
	w.wantExit(0, "after SIGTERM")
	if !w.cooked() {
		t.Fatalf("broker approvals --watch did not give the terminal back after SIGTERM")
	}
}

// Escape sequences are keys of their own, and decide nothing: Right
// (ESC [ C) does not offer a contract, Delete (ESC [ 3 ~) types no 3, F2
// (ESC O Q) does not quit, Alt-y does not grant; nor does Y. In the reason
// of a denial, Left neither ends it nor lets the y after it grant: the
// request is denied with the reason typed, and nothing ran.
func TestApprovalsWatchIgnoresEscapeSequences(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newWatchRig(t)
	run := runWaiting(t, r.d, r.ws, appending("ran")...)
	at := r.w.awaitFrom(0, run.id)
	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("\x1b[C\x1b[3~\x1bOQ\x1byY\r")
	at = r.w.awaitFrom(at, run.id+": granted 1 use(s)") // Enter: one use, not the 3 of Delete
	if o := run.ran(0); o.UsesLeft == nil || *o.UsesLeft != 0 {
		t.Fatalf("broker run --json after Enter: %v uses left, want 0", o.UsesLeft)
	}
	if shown := r.w.out.String(); strings.Contains(shown, "Contract ") || strings.Contains(shown, "No contract") {
		t.Fatalf("a key of a sequence offered a contract:\n%s", shown)
	}
	os.Remove(r.marker)

	run = runWaiting(t, r.d, r.ws, appending("denied")...)
	at = r.w.awaitFrom(at, run.id)
	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("n")
	at = r.w.awaitFrom(at, "Deny "+run.id+"; the reason")
	r.w.typeKeys("bad\x1b[Dy\x1b[3~\r")
	o := run.ran(exitNotExecuted)
	if o.Error == nil || o.Error.Code != "APPROVAL_DENIED" || !strings.Contains(o.Error.Message, "(bady)") {
		t.Fatalf("broker run of the request denied with Left in its reason: %+v", o.Error)
	}
	r.noMarker(t)
	r.w.awaitFrom(at, run.id+": denied (bady)")
	r.w.typeKeys("q")
	r.w.wantExit(0, "after q")
}

// A key answers only the question on the screen, about the request it
// names: uses typed for a request decided elsewhere meanwhile, and an
// Enter typed as the next one is shown, grant it nothing; a double-tapped
// y grants the request it was typed for, not the next one too.
func TestApprovalsWatchKeysAnswerTheQuestionShown(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newWatchRig(t)
	var runs []*waiting
	at := 0
	for _, line := range []string{"a", "b", "c"} {
		runs = append(runs, runWaiting(t, r.d, r.ws, appending(line)...))
		at = r.w.awaitFrom(at, runs[len(runs)-1].id)
	}
	a, b, c := runs[0], runs[1], runs[2]
	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("3")
	at = r.w.awaitFrom(at, "3")
	if out, code := r.d.CLI("approve", a.id); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", a.id, code, out)
	}
	a.ran(0)
	at = r.w.awaitFrom(at, a.id+" was approved elsewhere; nothing was decided here.")
	at = r.w.awaitFrom(at, "━━ "+b.id+" ━━") // b's card, again
	at = r.w.awaitFrom(at, watchKeys)
	r.w.typeKeys("\r") // as b is shown: no one read it

	r.w.answer("y")
	time.Sleep(100 * time.Millisecond)
	r.w.typeKeys("y")
	at = r.w.awaitFrom(at, b.id+": granted 1 use(s)")
	if o := b.ran(0); o.UsesLeft == nil || *o.UsesLeft != 0 {
		t.Fatalf("broker run of %s: %v uses left, want the one use of y, not 3", b.id, o.UsesLeft)
	}
	at = r.w.awaitFrom(at, watchKeys) // c's
	r.w.answer("n")
	at = r.w.awaitFrom(at, "Deny "+c.id+"; the reason")
	r.w.typeKeys("enough\r")
	if o := c.ran(exitNotExecuted); o.Error == nil || o.Error.Code != "APPROVAL_DENIED" {
		t.Fatalf("broker run of %s: %+v, want it denied, not granted by the second y", c.id, o.Error)
	}
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("marker %q, %v; want a and b only", b, err)
	}
	r.w.awaitFrom(at, c.id+": denied (enough)")
	r.w.typeKeys("q")
	r.w.wantExit(0, "after q")
}

// The daemon stops and starts again while the queue is watched: the
// watch says once why the broker does not answer, reconnects, and shows
// and decides a request made after the restart. A watch started while no
// broker runs waits for one the same way.
func TestApprovalsWatchSurvivesRestart(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newWatchRig(t)
	r.d.kill()
	const down = "The broker does not answer; reconnecting until it does: no broker is running on the state directory"
	at := r.w.awaitFrom(0, down)
	early := r.watch(t)
	early.await(down)
	d := startBroker(t, r.d.State)
	run := runWaiting(t, d, r.ws, appending("after")...)
	at = r.w.awaitFrom(at, "The broker answers.")
	at = r.w.awaitFrom(at, run.id)
	early.awaitFrom(0, run.id)
	// Why is said once for each reason: a kill that cuts a listing short
	// is said as what the listing met, then as no broker running.
	var why []string
	for line := range strings.Lines(r.w.out.String()) {
		if strings.Contains(line, "does not answer") {
			if slices.Contains(why, line) || len(why) == 2 {
				t.Fatalf("the watch said again that the broker does not answer:\n%s", r.w.out)
			}
			why = append(why, line)
		}
	}
	early.typeKeys("q")
	early.wantExit(0, "after q")
	r.w.awaitFrom(at, watchKeys)
	r.w.answer("y")
	run.ran(0)
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "after\n" {
		t.Fatalf("marker %q, %v", b, err)
	}
	r.w.typeKeys("q")
	r.w.wantExit(0, "after q")
}

// Off a terminal, --watch prints each request as it arrives, says once
// on stderr that it decides nothing, and decides nothing.
func TestApprovalsWatchOffTerminal(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	cmd := exec.Command(bins.broker, "approvals", "--watch", "--state", r.d.State)
	out, errb := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	run := runWaiting(t, r.d, r.ws, appending("ran")...)
	for deadline := time.Now().Add(daemonSafety); !strings.Contains(out.String(), run.id); time.Sleep(10 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("broker approvals --watch exited (%v) before printing the card of %s:\n%s\n%s", cmd.ProcessState, run.id, out, errb)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch never printed the card of %s:\n%s\n%s", run.id, out, errb)
		}
	}
	if !r.pending(t, run.id) || strings.Count(errb.String(), "decides nothing") != 1 {
		t.Fatalf("off a terminal: the request is not pending, or stderr does not say once that nothing is decided here:\n%s", errb)
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("broker approvals --watch interrupted: exit %d\n%s", code, errb)
	}
	r.noMarker(t)
}

// c offers the contract that covers the request and the earlier commands
// of its executable; y enables it: the waiting run completes under the
// contract, its receipt naming it, and another argv the contract accepts
// then runs with no approval at all.
func TestApprovalsWatchOffersContract(t *testing.T) {
	t.Parallel() // a daemon of its own
	need(t, "/usr/bin/git")
	r := newWatchRig(t)
	if out, err := exec.Command("/usr/bin/git", "init", "-q", r.ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	earlier := runWaiting(t, r.d, r.ws, "git", "diff")
	at := r.w.awaitFrom(0, earlier.id)
	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("y")
	if o := earlier.ran(0); o.Contract != nil {
		t.Fatalf("git diff approved exactly ran under contract %s", *o.Contract)
	}

	run := runWaiting(t, r.d, r.ws, "git", "status")
	at = r.w.awaitFrom(at, run.id)
	at = r.w.awaitFrom(at, watchKeys)
	r.w.answer("c")
	at = r.w.awaitFrom(at, "Contract git")
	at = r.w.awaitFrom(at, "    git status\r\n")
	at = r.w.awaitFrom(at, "    git diff\r\n")
	at = r.w.awaitFrom(at, "[y/N]")
	r.w.answer("y")
	o := run.ran(0)
	if o.Contract == nil || *o.Contract != "git" || o.Handle == nil {
		t.Fatalf("broker run --json of git status under the enabled contract: contract %v\n%s", o.Contract, run.stdout)
	}
	if rc := r.d.Receipt(*o.Handle); rc.Contract == nil || rc.Contract.Name != "git" || rc.Contract.Grant != *o.Lease {
		t.Fatalf("the receipt of git status does not name the git grant %v: %+v", o.Lease, rc.Contract)
	}
	r.w.awaitFrom(at, "Enabled contract git")

	again := startRun(t, r.d, r.ws, "git", "diff", "--stat")
	if o := again.ran(0); o.Contract == nil || *o.Contract != "git" || strings.Contains(again.stderr.String(), "approval required") {
		t.Fatalf("git diff --stat after the contract was enabled: contract %v\n%s", o.Contract, again.stderr)
	}
	r.w.typeKeys("q")
	r.w.wantExit(0, "after q")
}

// approvalIDs are the request ids a text listing names.
var approvalIDs = regexp.MustCompile(`\bar-[0-9a-f]+\b`)

// `broker approvals` and `broker approvals --json` list the same
// requests: the pending ones; with --all, also those decided or expired,
// with their state and reason.
func TestApprovalsListingsAgree(t *testing.T) {
	t.Parallel() // a daemon of its own
	d := startBroker(t, "")
	a := d.newAgent(t)
	var ids []string
	for _, arg := range []string{"approved", "denied", "pending"} {
		s, err := a.cl.Submit(a.WS, a.request(wire.ProfileShort, "/bin/echo", arg))
		if err != nil || s.Approval == nil {
			t.Fatalf("submit: %+v %v", s, err)
		}
		ids = append(ids, s.Approval.ID)
	}
	if out, code := d.CLI("approve", ids[0]); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if out, code := d.CLI("deny", ids[1], "--reason", "not echo"); code != 0 {
		t.Fatalf("deny: exit %d\n%s", code, out)
	}
	type item struct {
		ID     string  `json:"id"`
		State  string  `json:"state"`
		Reason *string `json:"reason"`
	}
	for _, c := range []struct {
		flags []string
		want  []string // id=state, in the listing's order
	}{
		{nil, []string{ids[2] + "=pending"}},
		{[]string{"--all"}, []string{ids[2] + "=pending", ids[1] + "=denied", ids[0] + "=approved"}},
	} {
		out, code := d.CLI(append([]string{"approvals", "--json"}, c.flags...)...)
		var got []string
		for _, v := range wholeListing[item](t, "approvals", out) {
			got = append(got, v.ID+"="+v.State)
			if v.ID == ids[1] && (v.Reason == nil || *v.Reason != "not echo") {
				t.Errorf("approvals --json %v: the denial's reason is %v", c.flags, v.Reason)
			}
		}
		if code != 0 || !slices.Equal(got, c.want) {
			t.Errorf("approvals --json %v: exit %d, %v, want %v", c.flags, code, got, c.want)
		}
		text, code := d.CLI(append([]string{"approvals"}, c.flags...)...)
		named := slices.Compact(approvalIDs.FindAllString(text, -1))
		var want []string
		for _, w := range c.want {
			want = append(want, strings.Split(w, "=")[0])
		}
		slices.Sort(named)
		slices.Sort(want)
		if code != 0 || !slices.Equal(slices.Compact(named), want) {
			t.Errorf("approvals %v names %v, its --json %v:\n%s", c.flags, named, want, text)
		}
		if len(c.flags) > 0 && !regexp.MustCompile(ids[1]+`\s+denied\s+.*: not echo`).MatchString(text) {
			t.Errorf("approvals --all does not show the denial and its reason:\n%s", text)
		}
	}
	// Nothing pending: the text says so, and what --all adds.
	if out, code := d.CLI("deny", ids[2]); code != 0 {
		t.Fatalf("deny: exit %d\n%s", code, out)
	}
	if out, code := d.CLI("approvals", "--json"); code != 0 || len(wholeListing[item](t, "approvals", out)) != 0 {
		t.Errorf("approvals --json with nothing pending: exit %d\n%s", code, out)
	}
	if out, _ := d.CLI("approvals"); !strings.Contains(out, "No approval requests are pending") || strings.Contains(out, ids[0]) {
		t.Errorf("approvals with nothing pending:\n%s", out)
	}
}
