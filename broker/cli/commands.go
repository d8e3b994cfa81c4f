package cli

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"warrant/wire"
)

func runApprovals(e *env, args []string) error {
	cl, _, err := e.connectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.List(wire.ListApprovals, false)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(nonNil(l.Approvals))
	}
	pending := 0
	for i := range l.Approvals {
		if v := &l.Approvals[i]; v.State == wire.RequestPending {
			writeCard(e.stdout, v)
			pending++
		}
	}
	if pending == 0 {
		fmt.Fprintln(e.stdout, "No approval requests are pending.")
	}
	if pending < len(l.Approvals) {
		fmt.Fprintln(e.stdout, "Ended last:")
	}
	for _, v := range l.Approvals[pending:] {
		line := fmt.Sprintf("  %s  %-8s  %s", v.ID, v.State, strconv.Quote(v.Identity.Executable.Requested))
		if v.Reason != "" {
			line += ": " + v.Reason
		}
		fmt.Fprintln(e.stdout, line)
	}
	return nil
}

func runApprove(e *env, args []string) error {
	uses := e.fs.Uint("uses", 1, "how many runs the lease allows")
	ttl := e.fs.Duration("ttl", time.Hour, "how long the lease lasts")
	binding := e.fs.String("binding", "", "pin the executable's binding: sealed-snapshot or in-place (default: the request's)")
	pos, err := e.parse(args, 1)
	if err != nil {
		return err
	}
	var b wire.Binding
	if *binding != "" {
		if err := b.UnmarshalText([]byte(*binding)); err != nil || (b != wire.SealedSnapshot && b != wire.InPlace) {
			return usageError{"--binding must be sealed-snapshot or in-place"}
		}
	}
	if *uses < 1 || *uses > 1<<32-1 {
		return usageError{"--uses must be from 1 to 4294967295"}
	}
	if *ttl < time.Second {
		return usageError{"--ttl must be at least 1s"}
	}
	cl, err := e.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.ApproveBinding(pos[0], uint32(*uses), *ttl, b)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(l)
	}
	fmt.Fprintf(e.stdout, "Granted lease %s for request %s: %d use(s) until %s, goal %s revision %d.\n",
		l.ID, l.ApprovalID, l.UsesLeft, time.Unix(l.ExpiresUnix, 0).Format(time.RFC3339), l.Goal, l.GoalRevision)
	return nil
}

func runDeny(e *env, args []string) error {
	reason := e.fs.String("reason", "", "why (shown to the agent)")
	cl, pos, err := e.connectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Deny(pos[0], *reason); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Denied %s; nothing of it can be reused.\n", pos[0])
	return nil
}

func runLeases(e *env, args []string) error {
	cl, _, err := e.connectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.List(wire.ListLeases, false)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(nonNil(l.Leases))
	}
	if len(l.Leases) == 0 {
		fmt.Fprintln(e.stdout, "No leases.")
	}
	now := time.Now().Unix()
	for _, v := range l.Leases {
		state := "usable"
		switch {
		case v.Revoked:
			state = "revoked"
		case v.ExpiresUnix <= now:
			state = "expired"
		case v.UsesLeft == 0:
			state = "used up"
		}
		fmt.Fprintf(e.stdout, "%s  %-8s %d use(s) left, expires %s, goal %s rev %d, request %s\n    fingerprint %s\n",
			v.ID, state, v.UsesLeft, time.Unix(v.ExpiresUnix, 0).Format(time.RFC3339), v.Goal, v.GoalRevision, v.ApprovalID,
			hex.EncodeToString(v.Fingerprint))
	}
	return nil
}

func runRevoke(e *env, args []string) error {
	cl, pos, err := e.connectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Revoke(pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Revoked %s.\n", pos[0])
	return nil
}

func runActions(e *env, args []string) error {
	unknown := e.fs.Bool("unknown", false, "only unknown outcomes the operator has not classified")
	cl, _, err := e.connectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.List(wire.ListActions, *unknown)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(nonNil(l.Actions))
	}
	if len(l.Actions) == 0 {
		fmt.Fprintln(e.stdout, "No actions.")
	}
	for _, a := range l.Actions {
		outcome := "-"
		if a.Outcome != 0 {
			outcome = a.Outcome.String()
		}
		fmt.Fprintf(e.stdout, "%s  %-9s outcome %-18s %s  goal %s  session %s  %s\n", a.Handle, a.State, outcome,
			strconv.Quote(a.Executable), a.Goal, a.Session, time.Unix(a.CreatedUnix, 0).Format(time.RFC3339))
	}
	return nil
}

func runResolve(e *env, args []string) error {
	note := e.fs.String("note", "", "what the operator knows about it")
	pos, err := e.parse(args, 2)
	if err != nil {
		return err
	}
	var c wire.Classification
	if err := c.UnmarshalText([]byte(pos[1])); err != nil {
		return usageError{fmt.Sprintf("classification %q is not success, failed or stop", pos[1])}
	}
	cl, err := e.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Resolve(pos[0], c, *note); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Recorded your statement that %s was %s. Its outcome stays unknown in receipts.\n", pos[0], c)
	return nil
}

// nonNil makes an empty listing print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
