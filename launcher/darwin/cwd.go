package darwin

import (
	"strings"

	"warrant/wire"
)

// checkCwd is the textual filter in front of the kernel check. macOS has
// no openat2 and no RESOLVE_BENEATH, so what stops a cwd from leaving the
// workspace is: no "..", no absolute path and no empty or "." component
// (refused here, in text), then one openat from the verified workspace fd
// with O_NOFOLLOW_ANY (no symlink anywhere on the way) and a comparison of
// (dev, ino, birth time) with the approved identity (verify_darwin.go).
//
// wire.CheckRelPath is the first filter; badComponent is a second,
// independent one that does not rely on path.Clean's rules.
func checkCwd(p string) *wire.Error {
	if err := wire.CheckRelPath(p); err != nil {
		return wire.Errorf(wire.CodePathInvalid, "%v", err)
	}
	if p == "." {
		return nil
	}
	if c, bad := badComponent(p); bad {
		return wire.Errorf(wire.CodePathInvalid, "cwd: %q has the component %q; only plain names are allowed beneath the workspace", p, c)
	}
	return nil
}

// badComponent returns the first component of the relative path p that is
// empty (a leading, doubled or trailing "/"), "." or "..".
func badComponent(p string) (string, bool) {
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".", "..":
			return c, true
		}
	}
	return "", false
}
