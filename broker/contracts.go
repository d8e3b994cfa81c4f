package broker

import (
	"context"
	"errors"
	"path"
	"strings"
	"time"

	"warrant/broker/internal/contract"
	"warrant/broker/internal/identity"
	"warrant/broker/internal/journal"
	"warrant/broker/internal/protect"
	"warrant/wire"
)

// enableContract grants the library contract m.Name (docs/contracts.md)
// for m.Workspace and m.Profile: its executable (or the one the operator
// named) is resolved as a submit of it with no arguments in the
// workspace's root would be, and the grant binds that identity without
// argv and cwd (contract.BaseFingerprint).
func (b *Broker) enableContract(ctx context.Context, m *wire.ContractEnable) (*wire.LeaseView, error) {
	c, err := contract.Builtin(m.Name)
	if err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "%v", err)
	}
	exe := m.Executable
	if exe == "" {
		exe = c.Executable()
	}
	r, err := b.resolve(&wire.Submit{Workspace: m.Workspace,
		Request: wire.ActionRequest{Executable: exe, Argv: []string{}, Cwd: ".", Profile: m.Profile}})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	base, err := contract.BaseFingerprint(r.Identity())
	if err != nil {
		return nil, err
	}
	return b.j.EnableContract(ctx, c.Name(), c.Digest(), base, r.Identity(), m.Uses, time.Duration(m.TTLSeconds)*time.Second)
}

// matchContract looks for a live contract grant of the workspace that
// binds r's identity (the same base) and whose contract accepts its argv
// in its cwd, for the action of goal g; the first grant to accept it
// (the one expiring first) gives the Lease Checkpoint consumes a use of.
// nil when none does: the caller asks for an exact approval. A grant
// whose contract this broker no longer ships, or ships with another
// digest, matches nothing.
func (b *Broker) matchContract(ctx context.Context, g journal.Goal, r *identity.Resolved) (*journal.Lease, error) {
	id := r.Identity()
	grants, err := b.j.LiveContractGrants(ctx, id.Workspace)
	if err != nil || len(grants) == 0 {
		return nil, err
	}
	protected := protectedBeneath(id.Cwd.Path)
	for i := range grants {
		gr := &grants[i]
		c, err := contract.Builtin(gr.Contract)
		if err != nil || c.Digest() != gr.Digest {
			continue
		}
		if ok, err := (&contract.Grant{Base: gr.Base}).Binds(id); err != nil || !ok {
			continue
		}
		p, err := c.Match(id.Argv, r.Cwd(), protected)
		var me *contract.MatchError
		if errors.As(err, &me) {
			continue
		}
		if err != nil {
			return nil, err
		}
		blob, err := wire.Canonical(p)
		if err != nil {
			return nil, err
		}
		return journal.UnderContract(gr, g, r.Fingerprint(), blob), nil
	}
	return nil, nil
}

// protectedNames are the names a contract's path argument may not pass
// through, at any depth: every repository's .git and the first component
// of each of protect.Paths. This is more than protect guards (its list
// is relative to the workspace root; a nested ".envrc" is refused here
// too), and it cannot know a core.hooksPath directory elsewhere: those
// stay the boundary's (protect), as for any command.
var protectedNames = func() map[string]bool {
	m := map[string]bool{".git": true}
	for _, p := range protect.Paths {
		m[strings.SplitN(p, "/", 2)[0]] = true
	}
	return m
}()

// protectedBeneath is the predicate contract.Match asks about a path
// relative to the cwd (cwd, relative to the workspace): true when the
// path, seen from the workspace root, has a protected name as a
// component (the cwd's own included).
func protectedBeneath(cwd string) func(string) bool {
	return func(rel string) bool {
		for _, part := range strings.Split(path.Join(cwd, rel), "/") {
			if protectedNames[part] {
				return true
			}
		}
		return false
	}
}
