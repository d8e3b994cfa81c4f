package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"warrant/broker/client"
	"warrant/broker/internal/cardtext"
	"warrant/broker/view"
	"warrant/wire"
)

func runApprove(e *Env, args []string) error {
	uses := e.Flags.Uint("uses", 1, "how many runs (`N`) the lease allows")
	ttl := e.Flags.Duration("ttl", time.Hour, "how long (`D`) the lease lasts")
	binding := e.Flags.String("binding", "", "pin the executable's `BINDING`: sealed-snapshot or in-place (default: the request's)")
	var egress egressFlag
	e.Flags.Var(&egress, "egress", "grant exactly these `HOST:PORT` entries (repeated, or a comma-separated list) instead of the list the request asked for; none grants no network access")
	pos, err := e.Parse(args, 1)
	if err != nil {
		return err
	}
	m := &wire.Approve{RequestID: pos[0]}
	if *binding != "" {
		if err := m.Binding.UnmarshalText([]byte(*binding)); err != nil || (m.Binding != wire.SealedSnapshot && m.Binding != wire.InPlace) {
			return UsageError{"--binding must be sealed-snapshot or in-place"}
		}
	}
	if m.SetEgress = egress != nil; m.SetEgress {
		if m.Egress, err = egress.granted(); err != nil {
			return err
		}
	}
	if err := CheckTerms(*uses, *ttl); err != nil {
		return err
	}
	m.Uses, m.TTLSeconds = uint32(*uses), uint32(*ttl/time.Second)
	cl, err := e.Dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.Grant(context.Background(), m)
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.approve/v1", struct {
			Lease view.Lease `json:"lease"`
		}{view.LeaseOf(l, time.Now())})
	}
	fmt.Fprintf(e.Stdout, "Granted lease %s for request %s: %d use(s) until %s, goal %s revision %d.\n",
		l.ID, l.ApprovalID, l.UsesLeft, time.Unix(l.ExpiresUnix, 0).Format(time.RFC3339), l.Goal, l.GoalRevision)
	switch {
	case len(l.Egress) > 0:
		fmt.Fprintf(e.Stdout, "May connect to: %s.\n", cardtext.EgressList(l.Egress))
	case m.SetEgress:
		fmt.Fprintln(e.Stdout, "It grants no network access.")
	}
	return nil
}

func runDeny(e *Env, args []string) error {
	reason := e.Flags.String("reason", "", "why (shown to the agent)")
	cl, pos, err := e.ConnectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Deny(pos[0], *reason); err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.deny/v1", struct {
			RequestID string  `json:"request_id"`
			Reason    *string `json:"reason"`
		}{pos[0], view.Text(*reason)})
	}
	fmt.Fprintf(e.Stdout, "Denied %s; nothing of it can be reused.\n", pos[0])
	return nil
}

// runLeases lists the usable leases, each with the command it allows and
// the uses it has left, and says of one granted under another policy or
// environment that it will not match (wire.LeaseView.WillNotMatch);
// --all adds the used-up, expired and revoked ones, in text and JSON
// alike.
func runLeases(e *Env, args []string) error {
	all := e.Flags.Bool("all", false, "also list used-up, expired and revoked leases")
	pf := e.PageFlags()
	cl, _, err := e.ConnectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := pf.Check(wire.MaxList); err != nil {
		return err
	}
	l, err := cl.ListPage(pf.wire(wire.ListLeases, false))
	if err != nil {
		return err
	}
	now := time.Now()
	shown := shownLeases(l.Leases, *all, now)
	page := listing(shown, l.Truncated, func(v *wire.LeaseView) view.Lease { return view.LeaseOf(v, now) },
		func(v view.Lease) string { return v.ID })
	if l.Truncated {
		// The next page follows the page's last lease, shown or not.
		page.NextAfter = &l.Leases[len(l.Leases)-1].ID
	}
	if e.JSON {
		return e.PrintJSON("warrant.leases/v1", page)
	}
	e.printLeases(shown, len(l.Leases), now)
	e.WriteMore("leases", page.NextAfter)
	return nil
}

// shownLeases are those of ls that `broker leases` shows at now: with
// all, every one; otherwise those still usable by their uses and expiry
// (usable or will_not_match, view.LeaseOf).
func shownLeases(ls []wire.LeaseView, all bool, now time.Time) []wire.LeaseView {
	shown := ls[:0:0]
	for _, v := range ls {
		if st := view.LeaseOf(&v, now).State; all || st == "usable" || st == "will_not_match" {
			shown = append(shown, v)
		}
	}
	return shown
}

// printLeases prints the leases shown of a page of listed ones, each
// with its state as view.LeaseOf says it (the uses left of a usable
// one), under one that will not match, why, and under one with an
// egress grant, the exact list it grants.
func (e *Env) printLeases(shown []wire.LeaseView, listed int, now time.Time) {
	if len(shown) == 0 {
		fmt.Fprintf(e.Stdout, "No usable leases (%d spent, expired or revoked: --all lists them).\n", listed)
	}
	for _, v := range shown {
		state := strings.ReplaceAll(view.LeaseOf(&v, now).State, "_", " ")
		if state == "usable" {
			state = fmt.Sprintf("%d use(s) left", v.UsesLeft)
		}
		profile := ""
		if v.Profile != 0 {
			profile = ", profile " + v.Profile.String()
		}
		fmt.Fprintf(e.Stdout, "%s  %-15s %-14s %s\n", v.ID, state, Expiry(time.Unix(v.ExpiresUnix, 0), now),
			ListedCommand(v.Executable, v.Argv, v.ArgvTruncated))
		if v.WillNotMatch != "" {
			fmt.Fprintf(e.Stdout, "    %s: a submit of its command does not use it now; `broker revoke %s%s` ends it\n", v.WillNotMatch, v.ID, StateFlag(e.State))
		}
		fmt.Fprintf(e.Stdout, "    goal %s rev %d%s, request %s, fingerprint %s\n",
			v.Goal, v.GoalRevision, profile, v.ApprovalID, hex.EncodeToString(v.Fingerprint))
		if len(v.Egress) > 0 {
			fmt.Fprintf(e.Stdout, "    May connect to: %s\n", cardtext.EgressList(v.Egress))
		}
	}
}

// Expiry says when a lease ends, relative to now.
func Expiry(at, now time.Time) string {
	if !at.After(now) {
		return "ended " + Age(now.Sub(at)) + " ago"
	}
	return "ends in " + Age(at.Sub(now))
}

// Age is a duration in its largest whole unit: 45s, 12m, 3h, 9d.
func Age(d time.Duration) string {
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

// ListedCommand is a listed command, shell-quoted, with a mark when the
// listing left part of its argv out.
func ListedCommand(exe string, argv []string, truncated bool) string {
	c := view.CommandLine(exe, argv)
	if truncated {
		c += " … (cut; the whole argv is on the card and in the receipt)"
	}
	return c
}

// CheckTerms refuses a lease's --uses and --ttl outside what a lease
// can hold.
func CheckTerms(uses uint, ttl time.Duration) error {
	if uses < 1 || uses > 1<<32-1 {
		return UsageError{"--uses must be from 1 to 4294967295"}
	}
	if ttl < time.Second || ttl/time.Second > 1<<32-1 {
		return UsageError{"--ttl must be from 1s to 4294967295s"}
	}
	return nil
}

func runRevoke(e *Env, args []string) error {
	return Revoke(e, args, (*client.Client).Revoke, "warrant.revoke/v1", "lease_id", "")
}

// Revoke ends now, by do, the lease or contract grant args name; its
// --json object is schema's, the id under key; the text calls it what.
func Revoke(e *Env, args []string, do func(*client.Client, string) error, schema, key, what string) error {
	cl, pos, err := e.ConnectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := do(cl, pos[0]); err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON(schema, map[string]string{key: pos[0]})
	}
	fmt.Fprintf(e.Stdout, "Revoked %s%s.\n", what, pos[0])
	return nil
}

// runActions lists actions, newest first: handle, state and outcome,
// exit code or signal, age, and the command (shell-quoted).
func runActions(e *Env, args []string) error {
	unknown := e.Flags.Bool("unknown", false, "only unknown outcomes the operator has not classified")
	pf := e.PageFlags()
	cl, _, err := e.ConnectArgs(args, 0)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := pf.Check(wire.MaxList); err != nil {
		return err
	}
	l, err := cl.ListPage(pf.wire(wire.ListActions, *unknown))
	if err != nil {
		return err
	}
	page := listing(l.Actions, l.Truncated, view.ActionEntryOf, func(a view.ActionEntry) string { return a.Handle })
	if e.JSON {
		return e.PrintJSON("warrant.actions/v1", page)
	}
	if len(l.Actions) == 0 {
		fmt.Fprintln(e.Stdout, "No actions.")
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
		fmt.Fprintf(e.Stdout, "%s  %-19s %-9s %4s ago  %s\n", a.Handle, outcome, code, Age(now.Sub(time.Unix(a.CreatedUnix, 0))),
			ListedCommand(a.Executable, a.Argv, a.ArgvTruncated))
	}
	more := "actions"
	if *unknown {
		more += " --unknown"
	}
	e.WriteMore(more, page.NextAfter)
	return nil
}

func runResolve(e *Env, args []string) error {
	note := e.Flags.String("note", "", "what the operator knows about it")
	pos, err := e.Parse(args, 2)
	if err != nil {
		return err
	}
	var c wire.Classification
	if err := c.UnmarshalText([]byte(pos[1])); err != nil {
		return UsageError{fmt.Sprintf("classification %q is not success, failed or stop", pos[1])}
	}
	cl, err := e.Dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Resolve(pos[0], c, *note); err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.resolve/v1", struct {
			Handle         string  `json:"handle"`
			Classification string  `json:"classification"`
			Note           *string `json:"note"`
		}{pos[0], c.String(), view.Text(*note)})
	}
	fmt.Fprintf(e.Stdout, "Recorded your statement that %s was %s. Its outcome stays unknown in receipts.\n", pos[0], c)
	return nil
}

// Deref is *s, or "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
