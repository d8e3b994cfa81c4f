package broker

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"warrant/broker/internal/caches"
	"warrant/broker/internal/identity"
	"warrant/broker/internal/policy"
	"warrant/broker/view"
	"warrant/wire"
)

// judgeLeases sets the WillNotMatch of each lease of ls still usable by
// its uses and expiry, from ids[i], the identity lease i's approval bound
// (journal.Leases): the leases of one listing page, judged once the
// journal's rows are closed, since making a policy stats and pins paths.
// A command's policy is made once per listing.
func (b *Broker) judgeLeases(ls []wire.LeaseView, ids []*wire.CommandIdentity) {
	made := policies{}
	now := b.cfg.Now().Unix()
	for i := range ls {
		if l := &ls[i]; !l.Revoked && l.UsesLeft > 0 && l.ExpiresUnix > now {
			l.WillNotMatch = b.judge(ids[i], made)
		}
	}
}

// willNotMatch says why a lease for the identity id can never match on
// this broker, or cannot be checked now, or "" when it may: its
// fingerprint binds the policy and the environment the broker that
// granted it gave the command, and this one (restarted with other read
// paths, another /etc, other declared variables or git identity) would
// give it others. The policy is made again as a submit makes it (inputs,
// decide) from the identity's workspace path, executable and toolchain,
// but without their side effects: the workspace's cache is taken as the
// identity has it. What the comparison leaves out (the cache's variables
// and directory, the toolchain's discovery, the executable's own bytes)
// may still keep a lease from matching; a submit then asks anew.
func (b *Broker) willNotMatch(id *wire.CommandIdentity) string { return b.judge(id, policies{}) }

// judge is willNotMatch with the policies made so far in a listing.
func (b *Broker) judge(id *wire.CommandIdentity, made policies) string {
	inEnv := envChanges(id, b.admit.Env)
	if !gitSame(id.GitIdentity, b.admit.Git) {
		inEnv = append(inEnv, "another git identity")
	}
	pol, err := b.policyNow(id, made)
	var inPolicy []string
	if err == nil {
		if d, err := identity.Digest(&pol); err != nil || !bytes.Equal(d, id.PolicyDigest) {
			inPolicy = policyChanges(&id.Policy, &pol)
		}
	}
	var said []string
	if len(inPolicy) > 0 {
		said = append(said, fmt.Sprintf("policy sha256 %s (%s)", short(id.PolicyDigest), strings.Join(inPolicy, "; ")))
	}
	if len(inEnv) > 0 {
		said = append(said, fmt.Sprintf("another environment (%s)", strings.Join(inEnv, "; ")))
	}
	switch {
	case len(said) > 0 && err != nil:
		return "granted under " + strings.Join(said, " and ") + ", will not match (its policy cannot be checked now: " + reasonOf(err) + ")"
	case len(said) > 0:
		return "granted under " + strings.Join(said, " and ") + ", will not match"
	case err != nil:
		return "cannot be checked now: " + reasonOf(err)
	}
	return ""
}

// reasonOf is why a policy cannot be made, as a submit would say it,
// printable as itself.
func reasonOf(err error) string {
	var we *wire.Error
	if errors.As(err, &we) {
		return view.Plain(we.Message)
	}
	return view.Plain(err.Error())
}

// policies are the policies made for the commands of one listing, by
// what policy.For and policy.WithToolchain make them from.
type policies map[policyKey]madePolicy

type policyKey struct {
	workspace, executable, interpreter, toolchain string
	inWorkspace                                   bool // wire.WorkspaceExecutable of the requested path
}

type madePolicy struct {
	pol wire.Policy
	err error
}

// policyNow is the policy a submit would give id's command now, with the
// cache's read-write directories and pins as id has them; or why none
// can be made now. The part made from the workspace, executable and
// toolchain comes from made, or is made and kept there.
func (b *Broker) policyNow(id *wire.CommandIdentity, made policies) (wire.Policy, error) {
	k := policyKey{workspace: id.Workspace.Path, executable: id.Executable.File.Path, inWorkspace: wire.WorkspaceExecutable(id.Executable.Requested)}
	if in := id.Executable.Interpreter; in != nil {
		k.interpreter = in.File.Path
	}
	if tc := id.Toolchain; tc != nil {
		k.toolchain = tc.Root
	}
	m, ok := made[k]
	if !ok {
		m.pol, m.err = policy.For(b.admit.Base, b.admit.Withheld, id.Workspace.Path, id.Executable)
		if m.err == nil && k.toolchain != "" {
			m.pol, m.err = policy.WithToolchain(m.pol, b.admit.Withheld, id.Workspace.Path, k.toolchain)
		}
		made[k] = m
	}
	if m.err != nil {
		return wire.Policy{}, m.err
	}
	pol := m.pol
	pol.ReadWrite = slices.Clone(id.Policy.ReadWrite)
	pol.Pins = slices.Clone(pol.Pins)
	for _, p := range pol.ReadWrite {
		pp, ok := id.Policy.Pin(p)
		if _, have := pol.Pin(p); !ok || have {
			continue
		}
		i, _ := slices.BinarySearchFunc(pol.Pins, p, func(x wire.PathPin, p string) int { return strings.Compare(x.Path, p) })
		pol.Pins = slices.Insert(pol.Pins, i, pp)
	}
	return pol, nil
}

// maxChanges bounds the changes named of one kind; the rest are counted.
const maxChanges = 3

// policyChanges names what differs between the policy then (the lease's)
// and now: paths granted or no longer, paths that are other objects now
// (their pins), the Landlock floor; "the policy differs" when the parts
// named here agree (a difference the comparison does not name).
func policyChanges(then, now *wire.Policy) []string {
	var out []string
	for _, l := range []struct {
		one, many string
		then, now []string
	}{
		{"read path", "read paths", then.ReadExec, now.ReadExec},
		{"/etc entry", "/etc entries", then.ReadEntries, now.ReadEntries},
		{"withheld path", "withheld paths", then.Excluded, now.Excluded},
		{"device", "devices", then.Devices, now.Devices},
	} {
		out = append(out, listChanges(l.one, l.many, l.then, l.now)...)
	}
	var replaced []string
	for _, p := range then.Pins {
		if q, ok := now.Pin(p.Path); ok && q != p {
			replaced = append(replaced, p.Path)
		}
	}
	out = append(out, named(replaced, "%s is another file or directory now", "%s are other files or directories now")...)
	if then.MinLandlockABI != now.MinLandlockABI {
		out = append(out, fmt.Sprintf("Landlock ABI floor %d, was %d", now.MinLandlockABI, then.MinLandlockABI))
	}
	if len(out) == 0 {
		out = []string{"the policy differs"}
	}
	return out
}

// listChanges names the entries of a policy list (one of them is a one,
// several are many) granted now and not then, and then and not now.
func listChanges(one, many string, then, now []string) []string {
	added := slices.DeleteFunc(slices.Clone(now), func(p string) bool { return slices.Contains(then, p) })
	gone := slices.DeleteFunc(slices.Clone(then), func(p string) bool { return slices.Contains(now, p) })
	return append(named(added, one+" %s added", many+" %s added"), named(gone, one+" %s gone", many+" %s gone")...)
}

// named is one phrase for the items of l (none: no phrase), one's or
// many's format with the list, of at most maxChanges then a count of the
// rest: "read path /opt/x added", "GOFLAGS and GOPROXY set now"; each
// item printable as itself (plain).
func named(l []string, one, many string) []string {
	l = slices.Clone(l)
	for i, s := range l {
		l[i] = view.Plain(s) // a path may hold any byte but '/' and NUL
	}
	switch len(l) {
	case 0:
		return nil
	case 1:
		return []string{fmt.Sprintf(one, l[0])}
	}
	shown := l[:min(len(l), maxChanges)]
	list := strings.Join(shown[:len(shown)-1], ", ") + " and " + shown[len(shown)-1]
	if len(l) > maxChanges {
		list = strings.Join(shown, ", ") + fmt.Sprintf(" and %d more", len(l)-maxChanges)
	}
	return []string{fmt.Sprintf(many, list)}
}

// envChanges names the variables of id's environment that this broker's
// (env: the allowlisted and declared ones) sets otherwise now: set now,
// no longer set, another value. The variables of the workspace's cache
// and of the identity's toolchain are left out: they are the command's.
func envChanges(id *wire.CommandIdentity, env []wire.EnvVar) []string {
	now := map[string]string{}
	for _, kv := range env {
		now[kv.Name] = kv.Value
	}
	var added, gone, changed []string
	cached := caches.Names()
	for _, kv := range id.Env {
		if slices.Contains(cached, kv.Name) || (id.Toolchain != nil && slices.Contains(id.Toolchain.Vars, kv.Name)) {
			continue
		}
		v, ok := now[kv.Name]
		switch {
		case !ok:
			gone = append(gone, kv.Name)
		case v != kv.Value:
			changed = append(changed, kv.Name)
		}
		delete(now, kv.Name)
	}
	for _, kv := range env {
		if _, ok := now[kv.Name]; ok {
			added = append(added, kv.Name)
		}
	}
	out := named(added, "%s set now", "%s set now")
	out = append(out, named(gone, "%s no longer set", "%s no longer set")...)
	return append(out, named(changed, "%s has another value", "%s have other values")...)
}

// gitSame reports whether two git identities are the same (or both none).
func gitSame(a, b *wire.GitIdentity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
