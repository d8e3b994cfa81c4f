package cli

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// The watch queue's keys (watch_keys.go) and listings (watch.go), fed
// byte sequences and snapshots without a broker: decider is a fake that
// records what was decided.

type decided struct {
	op, id string
	uses   uint32 // approve
	reason string // deny
}

type fakeDecider struct {
	made    []decided
	err     error         // every call's answer, when set
	hang    chan struct{} // ContractOffer and EnableContract wait for it, when set
	offers  []wire.ContractOfferItem
	offered int
}

func (f *fakeDecider) ApproveContext(_ context.Context, id string, uses uint32, _ time.Duration) (*wire.LeaseView, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.made = append(f.made, decided{op: "approve", id: id, uses: uses})
	return &wire.LeaseView{ID: "ls-1", ApprovalID: id, UsesLeft: uses}, nil
}

func (f *fakeDecider) DenyContext(_ context.Context, id, reason string) error {
	if f.err != nil {
		return f.err
	}
	f.made = append(f.made, decided{op: "deny", id: id, reason: reason})
	return nil
}

func (f *fakeDecider) ContractOffer(id string) ([]wire.ContractOfferItem, error) {
	f.offered++
	if f.hang != nil {
		<-f.hang
	}
	return f.offers, f.err
}

func (f *fakeDecider) EnableContract(m *wire.ContractEnable) (*wire.LeaseView, error) {
	if f.hang != nil {
		<-f.hang
	}
	if f.err != nil {
		return nil, f.err
	}
	f.made = append(f.made, decided{op: "enable " + m.Name, id: m.Request, uses: m.Uses})
	return &wire.LeaseView{ID: "ls-c", ApprovalID: m.Request, UsesLeft: m.Uses}, nil
}

// queueRig is a watcher on a terminal, its screen and its fake broker.
type queueRig struct {
	t        *testing.T
	w        *watcher
	d        *fakeDecider
	out, err *bytes.Buffer
	flushes  int
	clock    time.Time // the watcher's
}

func newQueueRig(t *testing.T) *queueRig {
	r := &queueRig{t: t, d: &fakeDecider{}, out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	e := &Env{name: "approvals", State: "/state", Stdout: r.out, Stderr: r.err}
	r.w = newWatcher(e, true)
	r.w.cl = r.d
	r.w.flush = func() { r.flushes++ }
	r.clock = time.Now()
	r.w.now = func() time.Time { return r.clock }
	return r
}

// request is a pending approval request of /bin/echo arg.
func request(id, arg string) wire.ApprovalView {
	exe := wire.FileIdentity{Path: "/bin/echo", SHA256: bytes.Repeat([]byte{0xab}, 32), Mode: 0o755}
	return wire.ApprovalView{ID: id, Goal: "default", GoalRevision: 1, Fingerprint: bytes.Repeat([]byte{1}, 32), State: wire.RequestPending,
		Identity: wire.CommandIdentity{Executable: wire.Executable{Requested: "/bin/echo", File: exe}, Argv: []string{arg},
			Profile: wire.ProfileShort, Workspace: wire.DirIdentity{Path: "/ws"}, Cwd: wire.DirIdentity{Path: "."}}}
}

// list brings the queue to the pending requests given, the others ended
// as given, and asks, as the watch's loop does.
func (r *queueRig) list(pending []wire.ApprovalView, ended ...wire.ApprovalView) {
	r.t.Helper()
	s := snapshot{pending: pending, ended: map[string]*wire.ApprovalView{}}
	for i := range ended {
		s.ended[ended[i].ID] = &ended[i]
	}
	if err := r.w.update(s); err != nil {
		r.t.Fatal(err)
	}
	r.w.ask()
}

// typeAt types s, read whole at at, a key at a time as the loop does; it
// returns false if a key quit.
func (r *queueRig) typeAt(s string, at time.Time) bool {
	keys, _ := decodeKeys([]byte(s), at, true)
	for _, k := range keys {
		if !r.w.key(context.Background(), k) {
			return false
		}
		r.w.ask()
	}
	return true
}

// read moves the clock on to a time a person who read the question on
// the screen types at, and returns it.
func (r *queueRig) read() time.Time {
	if r.clock.Before(r.w.asked.since) {
		r.clock = r.w.asked.since
	}
	r.clock = r.clock.Add(time.Millisecond)
	return r.clock
}

// soon moves the clock on by d and returns it.
func (r *queueRig) soon(d time.Duration) time.Time {
	r.clock = r.clock.Add(d)
	return r.clock
}

// typ types s, read whole, once the question was read.
func (r *queueRig) typ(s string) bool { return r.typeAt(s, r.read()) }

func (r *queueRig) wantMade(want ...decided) {
	r.t.Helper()
	if !slices.Equal(r.d.made, want) {
		r.t.Fatalf("decided %+v, want %+v; the screen:\n%s", r.d.made, want, r.out)
	}
}

// screenFrom is what the screen shows from byte from on.
func (r *queueRig) screenFrom(from int) string { return r.out.String()[from:] }

func TestDecodeKeys(t *testing.T) {
	at := time.Now()
	k := func(b byte) key { return key{b: b, at: at} }
	seq := key{seq: true, at: at}
	for _, c := range []struct {
		in    string
		whole bool
		want  []key
		rest  string
	}{
		{"y", false, []key{k('y')}, ""},
		{"\x1b[D", false, []key{seq}, ""},    // Left
		{"\x1b[3~", false, []key{seq}, ""},   // Delete
		{"\x1b[1;5C", false, []key{seq}, ""}, // Ctrl-Right
		{"\x1b[C", false, []key{seq}, ""},    // Right: not C
		{"\x1bOQ", false, []key{seq}, ""},    // F2: not Q
		{"\x1b[[B", false, []key{seq}, ""},   // the Linux console's F2
		{"\x1by", false, []key{seq}, ""},     // Alt-y
		{"y\x1b[Dn", false, []key{k('y'), seq, k('n')}, ""},
		{"\x1b", false, nil, "\x1b"},         // more may follow
		{"\x1b[1;", false, nil, "\x1b[1;"},   // it will
		{"\x1bO", false, nil, "\x1bO"},       // it may
		{"\x1b", true, []key{k(keyEsc)}, ""}, // nothing did: Esc
		{"\x1b[1;", true, []key{seq}, ""},    // cut: ignored whole
		{"\x1b\x03", false, []key{k(keyEsc), k(keyCtrlC)}, ""},
		{"\x1b[1\x03", false, []key{seq, k(keyCtrlC)}, ""},
		{"\x1b\x7f", false, []key{k(keyEsc), k(keyDelete)}, ""},
	} {
		got, rest := decodeKeys([]byte(c.in), at, c.whole)
		if !slices.Equal(got, c.want) || string(rest) != c.rest {
			t.Errorf("decodeKeys(%q, whole %v) = %v, rest %q; want %v, rest %q", c.in, c.whole, got, rest, c.want, c.rest)
		}
	}
}

// readKeys reads a sequence as one key, a lone ESC as Esc once nothing
// follows it, calls interrupt at Ctrl-C, and ends at end of input.
func TestReadKeys(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	quit := make(chan struct{})
	defer close(quit)
	interrupted := make(chan struct{}, 1)
	broke := make(chan error, 2)
	keys := readKeys(rd, quit, func() { interrupted <- struct{}{} }, broke)
	next := func() key {
		t.Helper()
		select {
		case k := <-keys:
			return k
		case <-time.After(5 * time.Second):
			t.Fatal("no key read")
		}
		return key{}
	}
	for _, c := range []struct {
		typed string
		want  key
	}{{"\x1b[3~", key{seq: true}}, {"\x1b", key{b: keyEsc}}, {"\x1bOQ", key{seq: true}}, {"y", key{b: 'y'}}, {"\x03", key{b: keyCtrlC}}} {
		before := time.Now()
		wr.WriteString(c.typed)
		if k := next(); k.b != c.want.b || k.seq != c.want.seq || k.at.Before(before) {
			t.Fatalf("typed %q: read %+v, want %+v read after %v", c.typed, k, c.want, before)
		}
	}
	select {
	case <-interrupted:
	default:
		t.Fatal("Ctrl-C did not interrupt")
	}
	wr.Close()
	if k, ok := <-keys; ok {
		t.Fatalf("after end of input: %+v", k)
	}
	select {
	case err := <-broke:
		t.Fatalf("end of input said %v", err)
	default:
	}
}

// A terminal that cannot be waited on ends the keys with why, rather
// than silently (L7).
func TestReadKeysSaysWhyItStops(t *testing.T) {
	f := os.NewFile(1000, "not open") // no descriptor 1000 is open here
	defer f.Close()
	quit := make(chan struct{})
	defer close(quit)
	broke := make(chan error, 2)
	keys := readKeys(f, quit, func() {}, broke)
	select {
	case err := <-broke:
		if !strings.Contains(err.Error(), "cannot read the keys typed") {
			t.Fatalf("broke: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("readKeys said nothing")
	}
	if _, ok := <-keys; ok {
		t.Fatal("a key was read")
	}
}

// Escape sequences decide nothing, in any mode; keys are case-exact (H1).
func TestWatchIgnoresEscapeSequences(t *testing.T) {
	r := newQueueRig(t)
	r.list([]wire.ApprovalView{request("ar-a", "a")})
	for _, s := range []string{"\x1b[3~", "\x1b[C", "\x1bOQ", "\x1by", "\x1bn", "\x1b[[C", "Y", "C", "N", "S", "Q"} {
		if !r.typ(s) {
			t.Fatalf("%q quit", s)
		}
		if r.d.offered != 0 || len(r.w.input) != 0 || r.w.mode != askKey || r.w.queue[0].ID != "ar-a" {
			t.Fatalf("%q: offered %d, typed %q, mode %v, head %s", s, r.d.offered, r.w.input, r.w.mode, r.w.queue[0].ID)
		}
	}
	r.wantMade()

	// In the reason of a denial, Left neither leaves it nor lets y grant.
	r.typ("n")
	r.typ("no\x1b[Dy\x1b[3~")
	if r.w.mode != askReason || string(r.w.input) != "noy" {
		t.Fatalf("the reason: mode %v, typed %q", r.w.mode, r.w.input)
	}
	r.wantMade()
	r.typ("\x1b") // Esc alone goes back
	if r.w.mode != askKey || len(r.w.input) != 0 {
		t.Fatalf("after Esc: mode %v, typed %q", r.w.mode, r.w.input)
	}
	r.typ("n")
	r.typ("no\r")
	r.wantMade(decided{op: "deny", id: "ar-a", reason: "no"})
}

// A key answers only the question on the screen when it was read, about
// the request it names (H2).
func TestWatchKeyAnswersOnlyTheQuestionShown(t *testing.T) {
	a, b := request("ar-a", "a"), request("ar-b", "b")
	approvedA := a
	approvedA.State = wire.RequestApproved

	t.Run("head decided elsewhere during an offer", func(t *testing.T) {
		r := newQueueRig(t)
		r.d.offers = []wire.ContractOfferItem{{Name: "echo", Description: "echo anything", Usage: "echo WORD", Covers: []string{"echo a"}}}
		r.list([]wire.ApprovalView{a, b})
		r.typ("c")
		if r.w.mode != askEnable || !strings.Contains(r.screenFrom(0), "approving ar-a? [y/N]") {
			t.Fatalf("c did not offer:\n%s", r.out)
		}
		typed := r.read() // y, meant for the offer, read as a moves on
		at := r.out.Len()
		r.list([]wire.ApprovalView{b}, approvedA)
		shown := r.screenFrom(at)
		if !strings.Contains(shown, "ar-a was approved elsewhere; nothing was decided here.\n") ||
			!strings.Contains(shown, "━━ ar-b ━━") || !strings.HasSuffix(shown, keysLine) {
			t.Fatalf("a leaving, b asked anew with its card:\n%s", shown)
		}
		r.typeAt("y", typed)
		r.typeAt("y", r.soon(100*time.Millisecond)) // before b's question could be read
		r.wantMade()
		r.typ("y")
		r.wantMade(decided{op: "approve", id: "ar-b", uses: 1})
	})
	t.Run("uses typed for a request that left", func(t *testing.T) {
		r := newQueueRig(t)
		r.list([]wire.ApprovalView{a, b})
		r.typ("3")
		r.list([]wire.ApprovalView{b}, approvedA)
		if len(r.w.input) != 0 {
			t.Fatalf("the 3 typed for ar-a is kept for ar-b: %q", r.w.input)
		}
		r.typeAt("\r", r.soon(100*time.Millisecond))
		r.wantMade()
	})
	t.Run("double-tapped y", func(t *testing.T) {
		r := newQueueRig(t)
		r.list([]wire.ApprovalView{a, b})
		r.typ("y")
		r.typeAt("y", r.soon(100*time.Millisecond)) // b's question, shown 100 ms
		r.wantMade(decided{op: "approve", id: "ar-a", uses: 1})
	})
	t.Run("a paste ending CR LF", func(t *testing.T) {
		r := newQueueRig(t)
		r.list([]wire.ApprovalView{a, b})
		flushes := r.flushes
		r.typ("3\r\n")
		r.wantMade(decided{op: "approve", id: "ar-a", uses: 3})
		if r.flushes == flushes {
			t.Fatal("the input was not flushed once ar-b was asked about")
		}
	})
	t.Run("pasted words", func(t *testing.T) {
		r := newQueueRig(t)
		r.list([]wire.ApprovalView{a, b})
		r.typ("yes, sure, continue\r")
		r.wantMade(decided{op: "approve", id: "ar-a", uses: 1})
		if r.w.mode != askKey || len(r.w.input) != 0 {
			t.Fatalf("after the paste: mode %v, typed %q", r.w.mode, r.w.input)
		}
	})
	t.Run("typed ahead of a skip", func(t *testing.T) {
		r := newQueueRig(t)
		r.list([]wire.ApprovalView{a})
		r.typ("sy")
		r.wantMade()
	})
	t.Run("typed ahead of a failed decision", func(t *testing.T) {
		r := newQueueRig(t)
		r.list([]wire.ApprovalView{a})
		r.d.err = wire.Errorf(wire.CodeBusy, "the broker is busy")
		r.typ("y")
		r.d.err = nil
		r.typeAt("3\r", r.clock) // read as the decision failed
		r.wantMade()
		r.typ("y") // asked anew, and read
		r.wantMade(decided{op: "approve", id: "ar-a", uses: 1})
	})
	t.Run("quit keys always quit", func(t *testing.T) {
		r := newQueueRig(t)
		r.list([]wire.ApprovalView{a})
		if r.typeAt("q", r.clock) {
			t.Fatal("q typed at once did not quit")
		}
		if r := newQueueRig(t); r.typeAt("\x03", time.Time{}) {
			t.Fatal("Ctrl-C did not quit")
		}
	})
}

// A number of uses has at most the digits of maxPromptUses and is
// bounded by it; Enter with none typed grants one use, as the question
// says (L4).
func TestWatchUses(t *testing.T) {
	r := newQueueRig(t)
	r.list([]wire.ApprovalView{request("ar-a", "a")})
	if !strings.Contains(r.out.String(), "y/Enter 1 use") {
		t.Fatalf("the question does not say Enter grants one use:\n%s", r.out)
	}
	for _, typed := range []string{"0\r", "1001\r"} {
		at := r.out.Len()
		r.typ(typed)
		if !strings.Contains(r.screenFrom(at), "Give a number of uses from 1 to 1000.") {
			t.Fatalf("%q:\n%s", typed, r.screenFrom(at))
		}
	}
	r.wantMade()
	r.typ("12345")
	if string(r.w.input) != "1234" || !strings.Contains(r.out.String(), "\a") {
		t.Fatalf("12345 typed: %q, and no bell:\n%q", r.w.input, r.out)
	}
	r.typ("\x7f\x7f\x7f\x7f\r")
	r.wantMade(decided{op: "approve", id: "ar-a", uses: 1})
}

// A decision that fails is said as a command's failure is: a refusal's
// sentence, an INTERNAL one plainly, the system's account under --debug
// only; nothing of it reaches the terminal as is (M3).
func TestWatchSaysFailuresPlainly(t *testing.T) {
	for _, c := range []struct {
		err         error
		says, never string
		debug       string
	}{
		{wire.Errorf(wire.CodeInternal, "journal: write /s/journal: no space left on device"),
			"ar-a: INTERNAL: the broker failed internally", "no space", "detail: journal: write /s/journal"},
		{&fs.PathError{Op: "open", Path: "/s/x", Err: syscall.ENOENT}, "ar-a: /s/x: no such file or directory", "open /s/x", "detail: open /s/x"},
		{wire.Errorf(wire.CodeGoalInactive, "goal \x1b[2Jx is paused"), "ar-a: GOAL_INACTIVE: goal ", "\x1b", ""},
	} {
		for _, debug := range []bool{false, true} {
			r := newQueueRig(t)
			r.w.e.Debug = debug
			r.list([]wire.ApprovalView{request("ar-a", "a")})
			r.d.err = c.err
			r.typ("y")
			out := r.out.String()
			if !strings.Contains(out, c.says) || strings.Contains(out, c.never) {
				t.Errorf("%v: the screen does not say %q, or says %q:\n%s", c.err, c.says, c.never, out)
			}
			if got := r.err.String(); debug && !strings.Contains(got, c.debug) || !debug && got != "" {
				t.Errorf("%v, --debug %v: stderr %q", c.err, debug, got)
			}
		}
	}
}

// The broker's own strings and the request's are quoted in the notes,
// as on the card.
func TestWatchNotesQuoteWhatDoesNotPrint(t *testing.T) {
	r := newQueueRig(t)
	a := request("ar-a", "a")
	r.d.offers = []wire.ContractOfferItem{{Name: "echo\x1b[2J", Description: "d\x1b]0;t\a", Usage: "echo\x1b[1m", Covers: []string{"echo \x1b[31m"}}}
	r.list([]wire.ApprovalView{a, request("ar-b", "b")})
	r.typ("c")
	r.typ("n")
	denied := a
	denied.State, denied.Reason = wire.RequestDenied, "no\x1b[2J"
	r.list([]wire.ApprovalView{request("ar-b", "b")}, denied)
	out := r.out.String()
	if strings.ContainsAny(out, "\x1b\a") {
		t.Fatalf("a raw escape reached the screen:\n%q", out)
	}
	for _, want := range []string{`echo\x1b[2J`, `echo \x1b[31m`, `no\x1b[2J`} {
		if !strings.Contains(out, want) {
			t.Errorf("the notes do not say %s:\n%q", want, out)
		}
	}
}

// A broker that does not answer, or is busy, is waited for, and why is
// said once; any other refusal ends the watch (L1).
func TestWatchWaitsForTheBroker(t *testing.T) {
	r := newQueueRig(t)
	none := wire.Errorf(wire.CodeIOFailed, "no broker is running on the state directory /state")
	for _, err := range []error{none, none, wire.Errorf(wire.CodeBusy, "the broker is busy"), wire.Errorf(wire.CodeBusy, "the broker is busy")} {
		if got := r.w.update(snapshot{err: err}); got != nil {
			t.Fatalf("update(%v) = %v", err, got)
		}
	}
	out := r.out.String()
	if strings.Count(out, "reconnecting") != 2 || strings.Count(out, "no broker is running") != 1 || strings.Count(out, "busy") != 1 {
		t.Fatalf("why the broker does not answer, said once each:\n%s", out)
	}
	r.list([]wire.ApprovalView{request("ar-a", "a")})
	if !strings.Contains(r.out.String(), "The broker answers.") {
		t.Fatalf("no word that the broker answers:\n%s", r.out)
	}
	refused := wire.Errorf(wire.CodeArgumentsInvalid, "no")
	if got := r.w.update(snapshot{err: refused}); got != refused {
		t.Fatalf("update(%v) = %v, want it to end the watch", refused, got)
	}
}

// The queue is followed from before a broker answers, and a panic of its
// goroutine ends the watch with an error, not a crash (L1, L2).
func TestPollQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snaps := make(chan snapshot)
	broke := make(chan error, 2)
	dials := 0
	go pollQueue(ctx, func() (*client.Client, error) {
		if dials++; dials == 3 {
			panic("a bug")
		}
		return nil, wire.Errorf(wire.CodeIOFailed, "no broker is running")
	}, snaps, broke)
	for range 2 {
		if s := <-snaps; s.err == nil || !strings.Contains(s.err.Error(), "no broker is running") {
			t.Fatalf("without a broker: %+v", s)
		}
	}
	select {
	case err := <-broke:
		if !strings.Contains(err.Error(), "stopped on a bug in broker: a bug") {
			t.Fatalf("the panic said %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the panic was not reported")
	}
}

// A request that takes no context does not hold the watch once it is
// interrupted (L3).
func TestWatchInterruptEndsAHungRequest(t *testing.T) {
	r := newQueueRig(t)
	r.d.hang = make(chan struct{})
	defer close(r.d.hang)
	r.list([]wire.ApprovalView{request("ar-a", "a")})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan struct{})
	go func() {
		k, _ := decodeKeys([]byte("c"), r.read(), true)
		r.w.key(ctx, k[0])
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the offer held the watch after the interrupt")
	}
	if !strings.Contains(r.out.String(), "interrupted before the broker answered") {
		t.Fatalf("the interrupt is not said:\n%s", r.out)
	}
}
