package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"warrant/broker"
	"warrant/broker/internal/probe"
	"warrant/broker/view"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// runProbe runs the capability probe anew on the state directory, stores
// its report and shows it. It needs the state directory to itself: stop a
// serving daemon first (its report was made when it started). The exit
// status is 0 only when the host is verified.
//
// With probeprog.Arg first, this binary is the probe's target program,
// run by the launcher inside the sandbox.
func runProbe(e *env, args []string) error {
	if len(args) > 0 && args[0] == probeprog.Arg {
		if st := probeprog.Main(args[1:]); st != 0 {
			return exitStatus(st)
		}
		return nil
	}
	launcher := e.fs.String("launcher", "", "the launcher binary (default $WARRANT_LAUNCHER or beside this binary)")
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	d, err := openBroker(context.Background(), e, brokerOptions{launcher: *launcher}, io.Discard, nil, true)
	if err != nil {
		return err
	}
	r := d.b.Capability()
	d.close()
	if e.json {
		err = e.printJSON("warrant.capability/v1", capabilityOf(r))
	} else {
		err = printReport(e.stdout, r)
	}
	if err == nil && r.State != wire.Verified {
		return exitStatus(exitFailed)
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
	fmt.Fprintf(w, "\n%d checks:\n", len(r.Checks))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  RESULT\tCHECK\tFROM\tEXPECTED\tOBSERVED\tEVIDENCE")
	for _, c := range r.Checks {
		res := "pass"
		if !c.Pass {
			res = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", res, c.Name, c.From, c.Expected, c.Observed, c.Evidence)
	}
	return tw.Flush()
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
		TestSeams: view.NonNil(r.TestSeams), CgroupDirs: view.NonNil(r.CgroupDirs), CgroupMissing: r.CgroupMissing,
		Binding: r.Binding}
	if c.Probed != nil {
		c.DurationMS = &r.DurationMS
	}
	return c
}
