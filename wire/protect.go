package wire

import (
	"fmt"
	"strings"
)

// ProtectBind is one protected entry beneath the workspace that the
// launcher makes a mount point of in the action's private mount
// namespace: ReadOnly, a read-only bind of the entry onto itself (writes,
// creations inside and its own replacement fail); otherwise a read-write
// bind onto itself, which only pins the name (renaming or removing it
// fails EBUSY), for a gitdir that holds read-only entries.
type ProtectBind struct {
	Path     string `cbor:"path"` // relative to the workspace, plain form, never "."
	ReadOnly bool   `cbor:"ro,omitempty"`
}

// MaxProtectBinds bounds a request's binds; past it, the broker's
// record of the rest before and after the run is their only guard.
const MaxProtectBinds = 256

// ProtectedBy says how an action's protected paths were guarded.
const (
	ProtectedByMount  = "mount"  // read-only binds in a private mount namespace; detected as well
	ProtectedByDetect = "detect" // recorded before and after only
)

// checkBinds requires plain relative paths in strictly ascending order,
// so that a parent precedes its children and no entry repeats.
func checkBinds(bs []ProtectBind) error {
	if len(bs) > MaxProtectBinds {
		return fmt.Errorf("protect: %d binds, more than %d", len(bs), MaxProtectBinds)
	}
	for i, b := range bs {
		if err := CheckRelPath(b.Path); err != nil {
			return fmt.Errorf("protect[%d]: %s", i, strings.TrimPrefix(err.Error(), "cwd: "))
		}
		if b.Path == "." {
			return fmt.Errorf("protect[%d]: the workspace itself", i)
		}
		if i > 0 && bs[i-1].Path >= b.Path {
			return fmt.Errorf("protect[%d]: %q is not after %q", i, b.Path, bs[i-1].Path)
		}
	}
	return nil
}
