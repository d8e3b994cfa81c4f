package clid

import (
	"context"
	"fmt"
	"io"
	"os"

	"warrant/broker"
	"warrant/broker/cli"
	"warrant/broker/client"
	"warrant/broker/internal/probe"
	"warrant/broker/view"
	"warrant/wire"
)

// capabilityStatus prints the capability report last stored on the state
// directory, without taking its lock.
func capabilityStatus(e *cli.Env) error {
	ctx := context.Background()
	r, err := broker.ReadCapability(ctx, e.State)
	if err != nil {
		return err
	}
	w, err := broker.ReadWitness(ctx, e.State)
	if err != nil {
		return err
	}
	u, err := broker.ReadUnremoved(e.State)
	if err != nil {
		return err
	}
	if r != nil {
		r.CgroupMissing = missingCgroups(e.State, r.CgroupDirs)
	}
	if e.JSON {
		if r == nil {
			r = &probe.Report{State: wire.Unverified, Reason: "no broker has probed this state directory yet"}
		}
		c := capabilityOf(r)
		c.Witness = witnessOf(w)
		c.Unremoved = unremovedOf(u)
		return e.PrintJSON("warrant.capability/v1", c)
	}
	if r == nil {
		fmt.Fprintf(e.Stdout, "capability: %s (no broker has probed this state directory yet; `broker probe` or any broker start probes it)\n", wire.Unverified)
	} else if err := printReport(e.Stdout, r); err != nil {
		return err
	}
	printWitness(e.Stdout, w)
	printUnremoved(e.Stdout, u)
	return nil
}

// printWitness prints the witness state, when a broker served with one.
func printWitness(out io.Writer, w *broker.WitnessStatus) {
	if w == nil {
		return
	}
	fmt.Fprintf(out, "witness: %s\n", w.Path)
	switch {
	case w.FileError != "":
		fmt.Fprintf(out, "  the witness file cannot be checked: %s\n", w.FileError)
	case w.FileSize == w.LogSize:
		fmt.Fprintf(out, "  holds the log's newest checkpoint (%d entries)\n", w.LogSize)
	case w.FileSize > w.LogSize:
		fmt.Fprintf(out, "  AHEAD OF THE LOG: its last checkpoint covers %d entries; the log's newest covers %d: the log lost entries (`broker receipts verify --checkpoint %s`)\n",
			w.FileSize, w.LogSize, w.Path)
	default:
		fmt.Fprintf(out, "  LAGS: its last checkpoint covers %d entries; the log's newest covers %d\n", w.FileSize, w.LogSize)
	}
	if w.Failing {
		fmt.Fprintf(out, "  FAILING: the broker's last write to it failed (recorded %s): %s; appends go on, and the next write that succeeds copies the newest checkpoint\n", view.Time(w.Reported), w.Error)
	}
}

// missingCgroups lists those of dirs (the stored report's cgroup
// directories) that are gone from the host while a broker answers on the
// state directory: something removed them under it, and its next action
// makes them again or, where its limits cannot be set there, is refused
// (known_not_executed, IO_FAILED). With no broker answering nothing is
// listed: the directories exist only while one runs. Nil says nothing
// was checked; an empty list that every directory is there.
func missingCgroups(state string, dirs []string) []string {
	if len(dirs) == 0 {
		return nil
	}
	cl, err := client.Dial(state)
	if err != nil {
		return nil
	}
	cl.Close()
	gone := []string{}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			gone = append(gone, d)
		}
	}
	return gone
}
