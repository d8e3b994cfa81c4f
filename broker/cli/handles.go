package cli

import (
	"fmt"
	"time"

	"warrant/broker/view"
	"warrant/wire"
)

// runStatus prints the state of one action; without a handle, the
// capability state stored in the journal (docs/architecture.md §2.5).
func runStatus(e *Env, args []string) error {
	pos, err := e.ParseRange(args, 0, 1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		if e.local == nil {
			return e.handOff()
		}
		return e.local.Capability(e)
	}
	cl, err := e.Dial()
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
func runWait(e *Env, args []string) error {
	timeout := e.Flags.Duration("timeout", time.Minute, "how long to wait")
	cl, pos, err := e.ConnectArgs(args, 1)
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
func runCancel(e *Env, args []string) error {
	reason := e.Flags.String("reason", "", "why, for the journal")
	cl, pos, err := e.ConnectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := cl.Cancel(pos[0], *reason)
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.cancel/v1", struct {
			Handle string `json:"handle"`
			Result string `json:"result"`
		}{pos[0], res.String()})
	}
	fmt.Fprintf(e.Stdout, "cancel %s: %s\n", pos[0], res)
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
func (e *Env) printStatus(handle string, st *wire.Status, state wire.ActionState) error {
	if st == nil {
		if e.JSON {
			return e.PrintJSON("warrant.status/v1", statusJSON{Handle: handle, State: state.String(), WaitTimeout: true})
		}
		fmt.Fprintf(e.Stdout, "%s: wait_timeout (still %s)\n", handle, state)
		return nil
	}
	if e.JSON {
		v := statusJSON{Handle: handle, State: st.State.String()}
		if st.Result != nil {
			r := view.Ending{Handle: handle, Status: st}
			a := r.Action()
			v.Result = &a
		}
		return e.PrintJSON("warrant.status/v1", v)
	}
	fmt.Fprintf(e.Stdout, "%s: %s", handle, st.State)
	if res := st.Result; res != nil {
		fmt.Fprintf(e.Stdout, ", %s", res.Outcome)
		if res.ExitCode != nil {
			fmt.Fprintf(e.Stdout, " (exit %d)", *res.ExitCode)
		}
		if res.Signal != 0 {
			fmt.Fprintf(e.Stdout, " (signal %d)", res.Signal)
		}
		if res.ReceiptID != "" {
			fmt.Fprintf(e.Stdout, ", receipt %s", res.ReceiptID)
		}
		if res.Error != nil {
			fmt.Fprintf(e.Stdout, "\n  %s: %s", res.Error.Code, res.Error.Message)
		}
	}
	fmt.Fprintln(e.Stdout)
	return nil
}
