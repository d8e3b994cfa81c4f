package broker

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"warrant/broker/internal/contract"
	"warrant/broker/internal/identity"
	"warrant/broker/view"
	"warrant/internal/fsid"
	"warrant/wire"
)

// contractOffers answers ContractOffer for approval request id, which
// must be pending and able to match here (offerable): each library
// contract whose program the request runs (programs.check) and that
// accepts its argv in its cwd, as a submit of it would be matched
// (matchContract), with the command lines it covers: the request's, then
// those of the latest requests (journal.RecentRequests) that a grant
// enabled for this one would bind — the same executable in the same
// workspace, profile and environment: the same base
// (contract.BaseFingerprint) — and that it accepts, newest first, each
// line once, at most wire.MaxOfferCovers. The one covering most comes
// first. A request with egress is offered none: a grant carries no
// network access (grantsNoEgress).
func (b *Broker) contractOffers(ctx context.Context, id string) (*wire.ContractOffers, error) {
	v, err := b.offerable(ctx, id)
	if err != nil {
		return nil, err
	}
	req := &v.Identity
	if len(req.Egress) > 0 {
		return &wire.ContractOffers{}, nil
	}
	progs := b.programsOf(req)
	var fit []*contract.Contract
	for _, name := range contract.Library() {
		c, err := contract.Builtin(name)
		if err != nil {
			return nil, err
		}
		if progs.check(c, v.ID, "") == nil {
			fit = append(fit, c)
		}
	}
	out := &wire.ContractOffers{}
	if len(fit) == 0 {
		return out, nil
	}
	ws, err := openRequestWorkspace(v)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	base, err := contract.BaseFingerprint(req)
	if err != nil {
		return nil, err
	}
	same := []*wire.CommandIdentity{req}
	seen := map[string]bool{coverLine(req): true}
	err = b.j.RecentRequests(ctx, func(rid string, e *wire.CommandIdentity) {
		if line := coverLine(e); rid != id && !seen[line] && e.Workspace.Same(req.Workspace) {
			if eb, berr := contract.BaseFingerprint(e); berr == nil && slices.Equal(eb, base) {
				seen[line] = true
				same = append(same, e)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	program := programFile(&req.Executable)
	for _, c := range fit {
		lines, err := covers(ws, c, same)
		if err != nil {
			return nil, err
		}
		if lines != nil {
			out.Offers = append(out.Offers, wire.ContractOfferItem{Name: c.Name(), Description: c.Description(),
				Usage: cut(strings.TrimRight(c.Usage(), "\n"), wire.MaxUsage), Covers: lines, Program: *program})
		}
	}
	slices.SortStableFunc(out.Offers, func(a, b wire.ContractOfferItem) int { return len(b.Covers) - len(a.Covers) })
	out.Offers = out.Offers[:min(len(out.Offers), wire.MaxOffers)]
	return out, nil
}

// offerable returns approval request id if a contract may be offered or
// enabled for it: still pending within its TTL, and its identity one that
// can match on this broker (willNotMatch, the sentence a lease listing
// gives). Otherwise a plain sentence says what became of it.
func (b *Broker) offerable(ctx context.Context, id string) (*wire.ApprovalView, error) {
	v, err := b.j.Request(ctx, id)
	if err != nil {
		return nil, err
	}
	switch v.State {
	case wire.RequestPending:
	case wire.RequestExpired:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"approval request %s expired because %s; a contract is enabled for a pending request, and submitting the command again asks anew", id, v.Reason)
	case wire.RequestDenied:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "approval request %s is already denied (%s); a contract is enabled for a pending request", id, v.Reason)
	default:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "approval request %s is already %s; a contract is enabled for a pending request", id, v.State)
	}
	if why := b.willNotMatch(&v.Identity); why != "" {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"approval request %s would never run under a grant here (%s); submitting the command again asks anew", id, why)
	}
	return v, nil
}

// programFile is the file exe runs as an offer and a grant show it.
func programFile(exe *wire.Executable) *wire.ProgramFile {
	return &wire.ProgramFile{Path: exe.File.Path, SHA256: exe.File.SHA256}
}

// coverLine is a request's command as an offer lists it: quoted for a
// shell (view.CommandLine), cut to wire.MaxCoverLine.
func coverLine(id *wire.CommandIdentity) string {
	argv, truncated := wire.ListedArgv(id.Argv)
	line := view.CommandLine(id.Executable.Requested, argv)
	if truncated {
		line += " …"
	}
	return cut(line, wire.MaxCoverLine)
}

// cut is s cut to at most n bytes at a UTF-8 boundary, ending in "…"
// when anything was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// errAnotherDir is why a directory a request named is refused: it is not
// the one it was.
var errAnotherDir = errors.New("it is another directory now")

// openRequestWorkspace opens the workspace of request v by its path,
// without following a symlink, and only while it is still the directory
// the request named: what a contract matches a request's argv beneath,
// as matchContract does a submit's.
func openRequestWorkspace(v *wire.ApprovalView) (*os.File, error) {
	p := v.Identity.Workspace.Path
	ws, err := identity.OpenWorkspace(p)
	if err == nil {
		var now wire.DirIdentity
		if now, err = fsid.Dir(int(ws.Fd()), p); err == nil && !now.Same(v.Identity.Workspace) {
			err = errAnotherDir
		}
		if err != nil {
			ws.Close()
		}
	}
	if err != nil {
		return nil, wire.Explain(wire.CodePathInvalid, err,
			"the workspace %s of request %s is not the directory it was when the command was asked for; submitting it again asks anew", p, v.ID)
	}
	return ws, nil
}

// matchIn matches the argv of id, a request's identity in the workspace
// ws, against c in its cwd, opened beneath ws for this match only and
// refused unless it is still the directory id named: nil when c accepts
// it, a *contract.MatchError saying which argument it refused, or why it
// could not be matched.
func matchIn(ws *os.File, c *contract.Contract, id *wire.CommandIdentity) error {
	dir, err := identity.OpenFileBeneath(ws, id.Cwd.Path)
	if err == nil {
		defer dir.Close()
		var now wire.DirIdentity
		if now, err = fsid.Dir(int(dir.Fd()), id.Cwd.Path); err == nil && !now.Same(id.Cwd) {
			err = errAnotherDir
		}
	}
	if err != nil {
		return wire.Explain(wire.CodePathInvalid, err,
			"the cwd %q of the request is not the directory it was when the command was asked for; submitting it again asks anew", id.Cwd.Path)
	}
	_, err = c.Match(id.Argv, dir, protectedBeneath(id.Cwd.Path))
	return err
}

// covers lists the command lines of reqs that c accepts in the
// workspace ws, at most wire.MaxOfferCovers; nil when it does not accept
// the first, the request offered for. An earlier request that cannot be
// matched any more (its cwd is gone) is not covered.
func covers(ws *os.File, c *contract.Contract, reqs []*wire.CommandIdentity) ([]string, error) {
	var out []string
	for i, id := range reqs {
		err := matchIn(ws, c, id)
		var me *contract.MatchError
		switch {
		case i == 0 && errors.As(err, &me):
			return nil, nil
		case i == 0 && err != nil:
			return nil, err
		case err != nil:
			continue
		}
		if out = append(out, coverLine(id)); len(out) == wire.MaxOfferCovers {
			break
		}
	}
	return out, nil
}
