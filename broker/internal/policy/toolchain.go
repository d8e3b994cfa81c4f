package policy

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"

	"warrant/wire"
)

// WithToolchain is pol, the policy For made for a program in the
// workspace at ws ("" for none: `broker toolchains`), with a toolchain's root (broker/internal/toolchain,
// canonical) granted read and execute, never write; unchanged when the
// read paths or the workspace cover the root already. A root is refused,
// with an error saying why (the caller then leaves the toolchain out, and
// the program runs as it would without it), when Withheld refuses it as a
// program's directory, when it holds the home directory or the broker's
// state directory, when it holds or lies in what /etc withholds, or when
// the read paths would pass the wire's cap. A read path beneath the root
// (the program's own directory, For's) is dropped with its pin: the root
// covers it.
func WithToolchain(pol wire.Policy, w *Withheld, ws, root string) (wire.Policy, error) {
	if !path.IsAbs(root) || path.Clean(root) != root {
		panic("policy: internal error: toolchain root " + root + " is not clean and absolute")
	}
	if (ws != "" && beneath(root, ws)) || slices.ContainsFunc(slices.Concat(pol.ReadExec, pol.ReadEntries), func(r string) bool { return beneath(root, r) }) {
		return pol, nil
	}
	if err := w.check("toolchain root", root+"/"); err != nil {
		return wire.Policy{}, err
	}
	for _, d := range w.dirs {
		if c := canonicalOr(d.path); d.path != "/" && beneath(c, root) && c != root {
			return wire.Policy{}, fmt.Errorf("the toolchain root %s holds %s (%s)", root, d.path, d.is)
		}
	}
	if i := slices.IndexFunc(pol.Excluded, func(x string) bool { return beneath(x, root) || beneath(root, x) }); i >= 0 {
		return wire.Policy{}, fmt.Errorf("the toolchain root %s holds or lies in %s, withheld from every action", root, pol.Excluded[i])
	}
	p := pol
	p.ReadExec = covering(append(slices.Clone(pol.ReadExec), root))
	if len(p.ReadExec) > wire.MaxPaths {
		return wire.Policy{}, fmt.Errorf("granting the toolchain root %s would make %d read paths, more than %d", root, len(p.ReadExec), wire.MaxPaths)
	}
	p.Pins = slices.DeleteFunc(slices.Clone(pol.Pins), func(pp wire.PathPin) bool {
		return !slices.ContainsFunc([][]string{p.ReadExec, p.ReadWrite, p.Devices, p.ReadEntries}, func(l []string) bool { return slices.Contains(l, pp.Path) })
	})
	if err := pinAll(&p); err != nil {
		return wire.Policy{}, fmt.Errorf("the toolchain root cannot be pinned: %w", err)
	}
	return p, nil
}

// canonicalOr is p with its symlinks resolved, or p.
func canonicalOr(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}
