package cli

import (
	"fmt"

	"warrant/broker/view"
	"warrant/wire"
)

// runApprovals lists the pending approval requests as cards, oldest
// first; --all adds those decided or expired last, each with its state
// and reason, in text and JSON alike. --watch follows the queue instead
// (watch.go).
func runApprovals(e *Env, args []string) error {
	e.Flags.BoolVar(&e.full, "full", false, "show every identity number the approval binds")
	all := e.Flags.Bool("all", false, "also list the requests decided or expired last, with their state and reason")
	watch := e.Flags.Bool("watch", false, "show each new request as it arrives and, on a terminal, decide it with one key")
	pf := e.PageFlags()
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	if *watch {
		if *all || e.JSON || pf.Given(e) {
			return UsageError{"--watch follows the pending requests: it takes no --all, --json, --limit or --after"}
		}
		return e.watch()
	}
	if err := pf.Check(wire.MaxList); err != nil {
		return err
	}
	cl, err := e.Dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.ListPage(pf.wire(wire.ListApprovals, false))
	if err != nil {
		return err
	}
	// The broker lists the pending requests, then (on the last page) those
	// that ended last; a truncated page holds pending ones only.
	pending := 0
	for pending < len(l.Approvals) && l.Approvals[pending].State == wire.RequestPending {
		pending++
	}
	shown, ended := l.Approvals[:pending], l.Approvals[pending:]
	if *all {
		shown = l.Approvals
	}
	page := listing(shown, l.Truncated, view.ApprovalOf, func(a view.Approval) string { return a.ID })
	if e.JSON {
		return e.PrintJSON("warrant.approvals/v1", page)
	}
	for i := range pending {
		e.writeCard(e.Stdout, &l.Approvals[i])
	}
	switch {
	case pending == 0 && !*all && len(ended) > 0:
		fmt.Fprintf(e.Stdout, "No approval requests are pending (%d decided or expired lately: --all lists them).\n", len(ended))
	case pending == 0:
		fmt.Fprintln(e.Stdout, "No approval requests are pending.")
	}
	if *all && len(ended) > 0 {
		fmt.Fprintln(e.Stdout, "Decided or expired lately, the last first:")
		for i := range ended {
			fmt.Fprintln(e.Stdout, endedLine(&ended[i]))
		}
	}
	e.WriteMore("approvals", page.NextAfter)
	return nil
}

// endedLine is a request that is no longer pending, on one line: its id,
// state and command, and the reason of a denial or expiry.
func endedLine(v *wire.ApprovalView) string {
	line := fmt.Sprintf("  %s  %-8s  %s", v.ID, v.State, view.CommandLine(v.Identity.Executable.Requested, v.Identity.Argv))
	if v.Reason != "" {
		line += ": " + view.Plain(v.Reason)
	}
	return line
}
