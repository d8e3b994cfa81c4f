package clid

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
	"warrant/broker/cli"

	"warrant/broker"
	"warrant/broker/internal/probe"
	"warrant/broker/view"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// runProbe runs the capability probe anew on the state directory, stores
// its report and shows it. It needs the state directory to itself:
// beside a broker serving it, no probe runs; it shows that broker's
// report instead (servedReport), and refuses --launcher, which asks for
// a probe. The exit status is 0 only when the report shown is verified:
// the new probe's, or the serving broker's.
//
// With probeprog.Arg first, this binary is the probe's target program,
// run by the launcher inside the sandbox.
func runProbe(e *cli.Env, args []string) error {
	if len(args) > 0 && args[0] == probeprog.Arg {
		if st := probeprog.Main(args[1:]); st != 0 {
			return cli.ExitStatus(st)
		}
		return nil
	}
	launcher := e.Flags.String("launcher", "", "the launcher binary (default $WARRANT_LAUNCHER or beside this binary); refused beside a serving broker")
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	if err := e.Serving("a probe with --launcher"); err != nil {
		if given(e, "launcher") {
			return cli.UsageError{Msg: err.Error()}
		}
		return servedReport(e)
	}
	d, err := openBroker(context.Background(), e, cli.BrokerOptions{Launcher: *launcher}, io.Discard, nil, true)
	if err != nil {
		return err
	}
	r := d.b.Capability()
	d.close()
	return showReport(e, r)
}

// Given reports whether the flag name was on the command line.
func given(e *cli.Env, name string) bool {
	set := false
	e.Flags.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// servedReport is `broker probe` beside a broker serving the state
// directory: no probe runs, and the report that broker stored (read
// once) is shown after a sentence saying whose it is and when it was
// made; a broker probes at its start unless it keeps a verified report
// of the same binding (host, launcher, policy and probe program).
func servedReport(e *cli.Env) error {
	r, err := broker.ReadCapability(context.Background(), e.State)
	if err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("no probe ran: a broker is serving %s and has stored no report yet; `broker status%s` shows its state",
			e.State, cli.StateFlag(e.State))
	}
	fmt.Fprintf(e.Stderr, "warrant: no probe ran: this is the report of the broker serving %s, made at %s by its probe at start "+
		"(or an earlier one of the same host, launcher and policy), and the exit status is this report's: 0 only when verified. "+
		"To probe anew, stop that broker and run `broker probe%s`; `broker status%s` shows the report too\n",
		e.State, r.At.Format(time.RFC3339), cli.StateFlag(e.State), cli.StateFlag(e.State))
	return showReport(e, r)
}

// showReport prints a capability report, as text or JSON, and fails
// unless it is verified.
func showReport(e *cli.Env, r *probe.Report) error {
	var err error
	if e.JSON {
		err = e.PrintJSON("warrant.capability/v1", capabilityOf(r))
	} else {
		err = printReport(e.Stdout, r)
	}
	if err == nil && r.State != wire.Verified {
		return cli.ExitStatus(cli.ExitFailed)
	}
	return err
}

// printReport shows a capability report to a person.
func printReport(w io.Writer, r *probe.Report) error {
	b := r.Binding
	fmt.Fprintf(w, "capability: %s\n", r.State)
	fmt.Fprintf(w, "probed:     %s in %d ms\n", r.At.Format(time.RFC3339), r.DurationMS)
	fmt.Fprintf(w, "host:       %s, kernel %s, Landlock ABI %d\n", b.OS, b.Kernel, b.LandlockABI)
	fmt.Fprintf(w, "seccomp:    %s\n", b.Seccomp)
	fmt.Fprintf(w, "cgroup:     %s\n", b.Cgroup)
	for _, d := range r.CgroupMissing {
		fmt.Fprintf(w, "cgroup:     MISSING NOW: %s is gone from the host (removed under the running broker); its next action makes it again, or is refused with IO_FAILED where its limits cannot be set there\n", d)
	}
	fmt.Fprintf(w, "launcher:   sha256:%s\n", b.LauncherDigest)
	fmt.Fprintf(w, "policy:     sha256:%s\n", b.PolicyDigest)
	fmt.Fprintf(w, "probe:      sha256:%s\n", b.ProbeDigest)
	fmt.Fprintf(w, "ptrace:     %s\n", b.Ptrace)
	if r.Reason != "" {
		fmt.Fprintf(w, "reason:     %s\n", r.Reason)
	}
	for _, h := range r.Hints {
		fmt.Fprintf(w, "fix:        %s\n", h)
	}
	for _, l := range r.Limits {
		if l.EnforcedBy == "none" {
			fmt.Fprintf(w, "limit:      %s NOT enforced on this host: %s\n", l.Name, l.Detail)
		} else {
			fmt.Fprintf(w, "limit:      %s enforced by %s (checked: see %s_limit below)\n", l.Name, l.EnforcedBy, l.Name)
		}
	}
	for _, f := range r.Features {
		switch {
		case f.Available:
			fmt.Fprintf(w, "%-11s available (its %d checks passed)\n", f.Name+":", len(f.Checks))
		case f.Unsupported != "":
			fmt.Fprintf(w, "%-11s NOT AVAILABLE on this host: %s; a request or approval with an egress grant is refused (SANDBOX_UNAVAILABLE); fix: %s\n",
				f.Name+":", f.Unsupported, f.Fix)
		default:
			fmt.Fprintf(w, "%-11s its checks failed (below)\n", f.Name+":")
		}
	}
	off := r.Off()
	fmt.Fprintf(w, "\n%d checks:\n", len(r.Checks))
	var bindings []string // in the order the battery ran under them
	byBinding := map[string][]probe.Check{}
	for _, c := range r.Checks {
		if byBinding[c.Binding] == nil {
			bindings = append(bindings, c.Binding)
		}
		byBinding[c.Binding] = append(byBinding[c.Binding], c)
	}
	for _, b := range bindings {
		checks := byBinding[b]
		fmt.Fprintf(w, "\nunder the %s binding%s: %d checks\n", b, bindingWords[b], len(checks))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  RESULT\tCHECK\tFROM\tEXPECTED\tOBSERVED\tEVIDENCE")
		for _, c := range checks {
			res := "pass"
			switch {
			case !c.Pass && off[c.Key()]:
				res = "off" // a check of a feature this host does not support (above)
			case !c.Pass:
				res = "FAIL"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", res, c.Name, c.From, c.Expected, c.Observed, c.Evidence)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// bindingWords says what runs under each binding the battery runs under
// (probe.Bindings), for the headings of printReport.
var bindingWords = map[string]string{
	wire.InPlace.String():        " (the installed file itself runs)",
	wire.SealedSnapshot.String(): " (a sealed copy of its bytes runs)",
}

// capability is a capability report (`broker probe --json`, `broker
// status --json`) under the JSON convention; probed and duration_ms are
// null when no probe ran.
type capability struct {
	State      string        `json:"state"`
	Binding    probe.Binding `json:"binding"`
	Probed     *string       `json:"probed"`
	DurationMS *int64        `json:"duration_ms"`
	Reason     *string       `json:"reason"`
	Failed     []string      `json:"failed"`
	Hints      []string      `json:"hints"`
	Checks     []probe.Check `json:"checks"`
	Limits     []probe.Limit `json:"limits"`
	Features   []feature     `json:"features"`
	TestSeams  []string      `json:"test_seams"`
	// CgroupDirs are the cgroup directories the binding's cgroup
	// describes; CgroupMissing those of them `broker status` found gone
	// while a broker answers ([] when none), null when nothing was
	// checked (probe, no broker answering, no directories).
	CgroupDirs    []string `json:"cgroup_dirs"`
	CgroupMissing []string `json:"cgroup_missing"`
	// Witness is what `broker status` says of the witness file (serve
	// --witness); null when no broker served with one, and from probe.
	Witness *witness `json:"witness"`
	// Unremoved is what `broker status` found a broker could not remove
	// of its actions' private directories ([] when nothing), each tried
	// again at every start; null from probe.
	Unremoved []unremoved `json:"unremoved"`
}

// feature is what the host does with one feature (probe.Feature):
// unsupported and fix are null unless the host lacks what it needs.
type feature struct {
	Name        string   `json:"name"`
	Available   bool     `json:"available"`
	Unsupported *string  `json:"unsupported"`
	Fix         *string  `json:"fix"`
	Checks      []string `json:"checks"`
}

func featuresOf(fs []probe.Feature) []feature {
	out := []feature{}
	for _, f := range fs {
		out = append(out, feature{Name: f.Name, Available: f.Available, Unsupported: view.Text(f.Unsupported),
			Fix: view.Text(f.Fix), Checks: view.NonNil(f.Checks)})
	}
	return out
}

// unremoved is an entry of the actions directory that a broker could not
// remove, and why.
type unremoved struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

func unremovedOf(u []broker.Unremoved) []unremoved {
	out := []unremoved{}
	for _, e := range u {
		out = append(out, unremoved{Path: e.Path, Error: e.Error})
	}
	return out
}

// printUnremoved prints what a broker could not remove of its actions'
// directories.
func printUnremoved(w io.Writer, u []broker.Unremoved) {
	for _, e := range u {
		fmt.Fprintf(w, "leftover:   %s NOT REMOVED (%s); every broker start tries again; remove it by hand if that cannot succeed\n", e.Path, e.Error)
	}
}

// witness is the last witness report a broker recorded and what the
// witness file and the journal hold now; error and file_error are null
// when there is none.
type witness struct {
	Path              string  `json:"path"`
	Failing           bool    `json:"failing"`
	Error             *string `json:"error"`
	Reported          string  `json:"reported"`
	LogCheckpoint     int64   `json:"log_checkpoint"`
	WitnessCheckpoint int64   `json:"witness_checkpoint"`
	FileError         *string `json:"file_error"`
}

func witnessOf(w *broker.WitnessStatus) *witness {
	if w == nil {
		return nil
	}
	return &witness{Path: w.Path, Failing: w.Failing, Error: view.Text(w.Error), Reported: view.Time(w.Reported),
		LogCheckpoint: w.LogSize, WitnessCheckpoint: w.FileSize, FileError: view.Text(w.FileError)}
}

func capabilityOf(r *probe.Report) capability {
	c := capability{State: r.State.String(), Probed: view.OptTime(r.At), Reason: view.Text(r.Reason),
		Failed: view.NonNil(r.Failed), Hints: view.NonNil(r.Hints), Checks: view.NonNil(r.Checks), Limits: view.NonNil(r.Limits),
		Features:  featuresOf(r.Features),
		TestSeams: view.NonNil(r.TestSeams), CgroupDirs: view.NonNil(r.CgroupDirs), CgroupMissing: r.CgroupMissing,
		Binding: r.Binding}
	if c.Probed != nil {
		c.DurationMS = &r.DurationMS
	}
	return c
}
