package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"warrant/broker"
	"warrant/broker/client"
	"warrant/broker/internal/probe"
	"warrant/broker/view"
	"warrant/wire"
)

// runStatus prints the state of one action; without a handle, the
// capability state stored in the journal (docs/architecture.md §2.5).
func runStatus(e *env, args []string) error {
	pos, err := e.parseRange(args, 0, 1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return e.capabilityStatus()
	}
	cl, err := e.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := cl.Query(pos[0])
	if err != nil {
		return err
	}
	return e.printStatus(pos[0], st, 0)
}

// runWait waits for an action to end, or for --timeout. Running out of
// time is not a failure of the action: it prints wait_timeout and the
// state, and exits 0.
func runWait(e *env, args []string) error {
	timeout := e.fs.Duration("timeout", time.Minute, "how long to wait")
	cl, pos, err := e.connectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, state, err := cl.Wait(pos[0], *timeout)
	if err != nil {
		return err
	}
	return e.printStatus(pos[0], st, state)
}

// runCancel asks the broker to end an action. Nothing is undone.
func runCancel(e *env, args []string) error {
	reason := e.fs.String("reason", "", "why, for the journal")
	cl, pos, err := e.connectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := cl.Cancel(pos[0], *reason)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON("warrant.cancel/v1", struct {
			Handle string `json:"handle"`
			Result string `json:"result"`
		}{pos[0], res.String()})
	}
	fmt.Fprintf(e.stdout, "cancel %s: %s\n", pos[0], res)
	return nil
}

// statusJSON is what `broker status HANDLE --json` and `broker wait
// --json` print: the action's state and, once it has ended (terminal or
// unknown), the object `broker run --json` prints; null before.
type statusJSON struct {
	Handle      string       `json:"handle"`
	State       string       `json:"state"`
	WaitTimeout bool         `json:"wait_timeout"` // wait's budget ran out first: not a failure
	Result      *view.Action `json:"result"`
}

// printStatus prints a status, or (st nil) a wait that ran out of time in
// state.
func (e *env) printStatus(handle string, st *wire.Status, state wire.ActionState) error {
	if st == nil {
		if e.json {
			return e.printJSON("warrant.status/v1", statusJSON{Handle: handle, State: state.String(), WaitTimeout: true})
		}
		fmt.Fprintf(e.stdout, "%s: wait_timeout (still %s)\n", handle, state)
		return nil
	}
	if e.json {
		v := statusJSON{Handle: handle, State: st.State.String()}
		if st.Result != nil {
			r := view.Ending{Handle: handle, Status: st}
			a := r.Action()
			v.Result = &a
		}
		return e.printJSON("warrant.status/v1", v)
	}
	fmt.Fprintf(e.stdout, "%s: %s", handle, st.State)
	if res := st.Result; res != nil {
		fmt.Fprintf(e.stdout, ", %s", res.Outcome)
		if res.ExitCode != nil {
			fmt.Fprintf(e.stdout, " (exit %d)", *res.ExitCode)
		}
		if res.Signal != 0 {
			fmt.Fprintf(e.stdout, " (signal %d)", res.Signal)
		}
		if res.ReceiptID != "" {
			fmt.Fprintf(e.stdout, ", receipt %s", res.ReceiptID)
		}
		if res.Error != nil {
			fmt.Fprintf(e.stdout, "\n  %s: %s", res.Error.Code, res.Error.Message)
		}
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// capabilityStatus prints the capability report last stored on the state
// directory, without taking its lock.
func (e *env) capabilityStatus() error {
	ctx := context.Background()
	r, err := broker.ReadCapability(ctx, e.state)
	if err != nil {
		return err
	}
	w, err := broker.ReadWitness(ctx, e.state)
	if err != nil {
		return err
	}
	u, err := broker.ReadUnremoved(e.state)
	if err != nil {
		return err
	}
	if r != nil {
		r.CgroupMissing = missingCgroups(e.state, r.CgroupDirs)
	}
	if e.json {
		if r == nil {
			r = &probe.Report{State: wire.Unverified, Reason: "no broker has probed this state directory yet"}
		}
		c := capabilityOf(r)
		c.Witness = witnessOf(w)
		c.Unremoved = unremovedOf(u)
		return e.printJSON("warrant.capability/v1", c)
	}
	if r == nil {
		fmt.Fprintf(e.stdout, "capability: %s (no broker has probed this state directory yet; `broker probe` or any broker start probes it)\n", wire.Unverified)
	} else if err := printReport(e.stdout, r); err != nil {
		return err
	}
	printWitness(e.stdout, w)
	printUnremoved(e.stdout, u)
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
