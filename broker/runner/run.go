package runner

import (
	"fmt"
	"os"
	"strings"

	"warrant/broker/internal/identity"
	"warrant/broker/lifecycle"
	"warrant/internal/fsid"
	"warrant/internal/profile"
	"warrant/receipt"
	"warrant/wire"
)

// run launches and supervises one action, then hands everything it
// observed to obs.End. It never returns before End was called.
func (r *Runner) run(l *Launch, obs Observer, cancel <-chan struct{}) {
	out, err := r.recorder(l, receipt.Stdout)
	var errs *receipt.Recorder
	if err == nil {
		if errs, err = r.recorder(l, receipt.Stderr); err != nil {
			out.Close()
		}
	}
	if err != nil {
		why := wire.Errorf(wire.CodeEvidenceBlocked, "the output recorder could not be built, so nothing was started: %v", err)
		obs.End(&Observation{Result: &wire.Result{Outcome: wire.KnownNotExecuted, Error: why},
			Run: &lifecycle.Result{Outcome: wire.KnownNotExecuted, Err: why}})
		return
	}
	var events []lifecycle.Event
	leasedAtExec := false
	spec := r.spec(l, out, errs, cancel, func(e lifecycle.Event) {
		if e.Kind == receipt.EventStarted { // the exec happened: the lease must have held until now
			leasedAtExec = l.Resolved.Leased()
		}
		events = append(events, e)
		obs.Event(e)
	}, obs.Launched)
	var later []func()
	spec.After = func(start func()) { later = append(later, start) }
	defer func() { // once obs.End has recorded the end
		for _, start := range later {
			start()
		}
	}()
	res := lifecycle.Run(spec)
	if p := l.Resolved.Identity().Profile; res.Outcome == wire.TimedOutReaped && l.ProbeLimits == nil {
		e := *res.Err
		e.Message += fmt.Sprintf("; that is the %s profile's limit%s", p, longer(p))
		res.Err = &e
	}
	outC, outErr := out.Close()
	errC, errErr := errs.Close()

	result := &wire.Result{Outcome: res.Outcome, Error: res.Err, GroupGone: res.GroupGone,
		ExitCode: ExitCode(&res), Signal: uint8(res.Signal)}
	var streams []*receipt.Captured
	if !res.Started.IsZero() { // STARTED: Ready then EOF
		result.Stdout, result.Stderr = outC.Projection(projectChars), errC.Projection(projectChars)
		if outErr != nil || errErr != nil {
			// The facts of the run stand; its output is withheld.
			result.Error = wire.Errorf(wire.CodeEvidenceBlocked, "output redaction failed; no output is shown or kept")
			result.Stdout.Text, result.Stderr.Text = "", ""
		}
		streams = []*receipt.Captured{outC, errC}
		result.Denials, result.Egress = res.Denials, res.Egress
	}
	o := &Observation{Result: result, Run: &res, Events: events, Streams: streams}
	if res.Ready != nil && res.Ready.Binding == wire.InPlace {
		o.BoundBy, o.WitnessFailed = inPlaceBound(l, res.Ready.BoundBy, leasedAtExec)
	}
	obs.End(o)
}

// inPlaceBound says what bound the bytes of an in-place launch, or why
// nothing did. A program's bytes are bound when the broker's read lease,
// taken before it hashed them, held until the exec (no writer could exist
// in between, a writable mapping included, and the kernel denies writes
// once it runs), or when the broker's uid cannot write the file at all. A
// script is read by its interpreter by path: its bytes are never bound.
// Either way the installed files must still be their approved selves
// after the run. Unwritable is the broker's own measure as much as the
// launcher's: in the user namespace an unprivileged broker starts the
// launcher in, a file of an unmapped owner reads as the overflow uid,
// which is the launcher's own when the broker runs as that uid (65534).
// The witness's unchanged ctime after the run says owner and mode were
// not changed in between.
func inPlaceBound(l *Launch, launcher wire.BoundBy, leasedAtExec bool) (by, broken string) {
	switch {
	case l.Resolved.Identity().Executable.Interpreter != nil:
		by = "script-read-by-path"
	case leasedAtExec:
		by = "read-lease"
	case launcher == wire.Unwritable || identity.Unwritable(&l.Resolved.Identity().Executable.File):
		by = "unwritable"
	default:
		return "none", "no read lease held until the exec and the file is writable by this uid"
	}
	return by, witness(l)
}

// witness checks, once the action is over, that the installed files an
// in-place launch executed still have their approved identity (inode,
// size, mode, owner, mtime, ctime), measured on the descriptors the broker
// held since it hashed them. It returns why not, or "".
func witness(l *Launch) string {
	id := l.Resolved.Identity()
	files := []struct {
		f    *os.File
		want wire.FileIdentity
	}{{l.Resolved.Exe(), id.Executable.File}}
	if in := id.Executable.Interpreter; in != nil {
		files = append(files, struct {
			f    *os.File
			want wire.FileIdentity
		}{l.Resolved.Interp(), in.File})
	}
	for _, c := range files {
		got, err := fsid.Stat(int(c.f.Fd()), c.want.Path)
		if err != nil {
			return fmt.Sprintf("%s could not be measured after the run: %v", c.want.Path, err)
		}
		if !fsid.SameFile(got, c.want) {
			return fmt.Sprintf("%s changed between its approval and the end of the run", c.want.Path)
		}
	}
	return ""
}

// ExitCode is the root's exit code for outcome exited only: a group the
// broker ended is never reported with an exit code that could be read as
// the command's own success.
func ExitCode(res *lifecycle.Result) *int32 {
	if res.Outcome != wire.Exited || res.ExitCode == nil {
		return nil
	}
	code := int32(*res.ExitCode)
	return &code
}

func (r *Runner) recorder(l *Launch, s receipt.StreamName) (*receipt.Recorder, error) {
	lim := profile.Of(l.Resolved.Identity().Profile)
	cfg := receipt.RecorderConfig{Stream: s, Retain: lim.Retain, Budget: lim.HardOutput,
		MACKey: l.MACKey, Rules: r.rules}
	if r.live != nil {
		handle := l.Handle
		cfg.Live = func(p []byte) { r.live(handle, s, p) }
	}
	return receipt.NewRecorder(cfg)
}

// longer is what a timeout under p adds about the longer profiles, and
// which one to ask for: a first build or test run fills the workspace's
// cache (a one-file Go module's first `go test` took 10 to 12 s here,
// past short's 10 s; its second, 0.2 s).
func longer(p wire.Profile) string {
	more := profile.Longer(p)
	if more == "" {
		return ", the longest"
	}
	next, _, _ := strings.Cut(more, " (")
	return ", and a longer profile needs its own approval: " + more +
		"; a first build or test run, which fills the workspace's cache, often needs more: ask for --profile " + next
}
