package broker

import (
	"slices"
	"strings"

	"warrant/broker/internal/policy"
	"warrant/wire"
)

// inputs decides an action's environment and policy once its workspace
// and executable are known (identity.Inputs): the executable's default
// policy (policy.For), then the workspace's cache — created if need be,
// its use recorded — as a read-write path, with its variables added to
// the allowlisted and declared environment. Both are in the identity, so
// the fingerprint covers the cache's path and pin.
func (b *Broker) inputs(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, error) {
	pol, err := policy.For(b.base, b.withheld, ws.Path, exe)
	if err != nil {
		return nil, wire.Policy{}, err
	}
	c, err := b.caches.For(ws)
	if err != nil {
		return nil, wire.Policy{}, wire.Errorf(wire.CodeIOFailed, "%v", err)
	}
	if pol, err = policy.WithReadWrite(pol, c.Dir); err != nil {
		return nil, wire.Policy{}, err
	}
	env := append(slices.Clone(b.env), c.Env...)
	slices.SortFunc(env, func(x, y wire.EnvVar) int { return strings.Compare(x.Name, y.Name) })
	return env, pol, nil
}
