package cli

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"warrant/broker/view"
	"warrant/wire"
)

func runApprovals(e *env, args []string) error {
	e.fs.BoolVar(&e.full, "full", false, "show every identity number the approval binds")
	pf := e.pageFlags()
	cl, _, err := e.connectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := pf.check(wire.MaxList); err != nil {
		return err
	}
	l, err := cl.ListPage(pf.wire(wire.ListApprovals, false))
	if err != nil {
		return err
	}
	page := listing(l.Approvals, l.Truncated, view.ApprovalOf, func(a view.Approval) string { return a.ID })
	if e.json {
		return e.printJSON("warrant.approvals/v1", page)
	}
	pending := 0
	for i := range l.Approvals {
		if v := &l.Approvals[i]; v.State == wire.RequestPending {
			e.writeCard(e.stdout, v)
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
	e.writeMore("approvals", page.NextAfter)
	return nil
}

func runApprove(e *env, args []string) error {
	uses := e.fs.Uint("uses", 1, "how many runs (`N`) the lease allows")
	ttl := e.fs.Duration("ttl", time.Hour, "how long (`D`) the lease lasts")
	binding := e.fs.String("binding", "", "pin the executable's `BINDING`: sealed-snapshot or in-place (default: the request's)")
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
	if err := checkTerms(*uses, *ttl); err != nil {
		return err
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
		return e.printJSON("warrant.approve/v1", struct {
			Lease view.Lease `json:"lease"`
		}{view.LeaseOf(l, time.Now())})
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
	if e.json {
		return e.printJSON("warrant.deny/v1", struct {
			RequestID string  `json:"request_id"`
			Reason    *string `json:"reason"`
		}{pos[0], view.Text(*reason)})
	}
	fmt.Fprintf(e.stdout, "Denied %s; nothing of it can be reused.\n", pos[0])
	return nil
}

// runLeases lists the usable leases, each with the command it allows and
// the uses it has left; --all adds the used-up, expired and revoked ones,
// in text and JSON alike.
func runLeases(e *env, args []string) error {
	all := e.fs.Bool("all", false, "also list used-up, expired and revoked leases")
	pf := e.pageFlags()
	cl, _, err := e.connectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := pf.check(wire.MaxList); err != nil {
		return err
	}
	l, err := cl.ListPage(pf.wire(wire.ListLeases, false))
	if err != nil {
		return err
	}
	now := time.Now()
	shown := l.Leases[:0:0]
	for _, v := range l.Leases {
		if *all || leaseState(&v, now) == "usable" {
			shown = append(shown, v)
		}
	}
	page := listing(shown, l.Truncated, func(v *wire.LeaseView) view.Lease { return view.LeaseOf(v, now) },
		func(v view.Lease) string { return v.ID })
	if l.Truncated {
		// The next page follows the page's last lease, shown or not.
		page.NextAfter = &l.Leases[len(l.Leases)-1].ID
	}
	if e.json {
		return e.printJSON("warrant.leases/v1", page)
	}
	if len(shown) == 0 {
		fmt.Fprintf(e.stdout, "No usable leases (%d spent, expired or revoked: --all lists them).\n", len(l.Leases))
	}
	for _, v := range shown {
		state := leaseState(&v, now)
		if state == "usable" {
			state = fmt.Sprintf("%d use(s) left", v.UsesLeft)
		}
		profile := ""
		if v.Profile != 0 {
			profile = ", profile " + v.Profile.String()
		}
		fmt.Fprintf(e.stdout, "%s  %-15s %-14s %s\n    goal %s rev %d%s, request %s, fingerprint %s\n",
			v.ID, state, expiry(time.Unix(v.ExpiresUnix, 0), now), listedCommand(v.Executable, v.Argv, v.ArgvTruncated),
			v.Goal, v.GoalRevision, profile, v.ApprovalID, hex.EncodeToString(v.Fingerprint))
	}
	e.writeMore("leases", page.NextAfter)
	return nil
}

// leaseState is "usable", "revoked", "expired" or "used up".
func leaseState(v *wire.LeaseView, now time.Time) string {
	switch {
	case v.Revoked:
		return "revoked"
	case v.ExpiresUnix <= now.Unix():
		return "expired"
	case v.UsesLeft == 0:
		return "used up"
	}
	return "usable"
}

// expiry says when a lease ends, relative to now.
func expiry(at, now time.Time) string {
	if !at.After(now) {
		return "ended " + age(now.Sub(at)) + " ago"
	}
	return "ends in " + age(at.Sub(now))
}

// age is a duration in its largest whole unit: 45s, 12m, 3h, 9d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// listedCommand is a listed command, shell-quoted, with a mark when the
// listing left part of its argv out.
func listedCommand(exe string, argv []string, truncated bool) string {
	c := view.CommandLine(exe, argv)
	if truncated {
		c += " … (cut; the whole argv is on the card and in the receipt)"
	}
	return c
}

// checkTerms refuses a lease's --uses and --ttl outside what a lease
// can hold.
func checkTerms(uses uint, ttl time.Duration) error {
	if uses < 1 || uses > 1<<32-1 {
		return usageError{"--uses must be from 1 to 4294967295"}
	}
	if ttl < time.Second || ttl/time.Second > 1<<32-1 {
		return usageError{"--ttl must be from 1s to 4294967295s"}
	}
	return nil
}

func runRevoke(e *env, args []string) error { return revoke(e, args, "warrant.revoke/v1", "lease_id") }

// revoke ends the lease (or contract grant) args name now; its --json
// object is schema's, the id under key.
func revoke(e *env, args []string, schema, key string) error {
	cl, pos, err := e.connectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Revoke(pos[0]); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(schema, map[string]string{key: pos[0]})
	}
	fmt.Fprintf(e.stdout, "Revoked %s.\n", pos[0])
	return nil
}

// runActions lists actions, newest first: handle, state and outcome,
// exit code or signal, age, and the command (shell-quoted).
func runActions(e *env, args []string) error {
	unknown := e.fs.Bool("unknown", false, "only unknown outcomes the operator has not classified")
	pf := e.pageFlags()
	cl, _, err := e.connectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := pf.check(wire.MaxList); err != nil {
		return err
	}
	l, err := cl.ListPage(pf.wire(wire.ListActions, *unknown))
	if err != nil {
		return err
	}
	page := listing(l.Actions, l.Truncated, view.ActionEntryOf, func(a view.ActionEntry) string { return a.Handle })
	if e.json {
		return e.printJSON("warrant.actions/v1", page)
	}
	if len(l.Actions) == 0 {
		fmt.Fprintln(e.stdout, "No actions.")
	}
	now := time.Now()
	for _, a := range l.Actions {
		outcome := a.State.String()
		if a.Outcome != 0 {
			outcome = a.Outcome.String()
		}
		code := "-"
		switch {
		case a.ExitCode != nil:
			code = "exit " + strconv.Itoa(int(*a.ExitCode))
		case a.Signal != 0:
			code = "signal " + strconv.Itoa(int(a.Signal))
		}
		fmt.Fprintf(e.stdout, "%s  %-19s %-9s %4s ago  %s\n", a.Handle, outcome, code, age(now.Sub(time.Unix(a.CreatedUnix, 0))),
			listedCommand(a.Executable, a.Argv, a.ArgvTruncated))
	}
	more := "actions"
	if *unknown {
		more += " --unknown"
	}
	e.writeMore(more, page.NextAfter)
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
	if e.json {
		return e.printJSON("warrant.resolve/v1", struct {
			Handle         string  `json:"handle"`
			Classification string  `json:"classification"`
			Note           *string `json:"note"`
		}{pos[0], c.String(), view.Text(*note)})
	}
	fmt.Fprintf(e.stdout, "Recorded your statement that %s was %s. Its outcome stays unknown in receipts.\n", pos[0], c)
	return nil
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
