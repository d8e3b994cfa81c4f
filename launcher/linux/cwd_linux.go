package linux

import (
	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
	"warrant/wire"
)

// checkWorkspace performs step 3: the received directory must be the
// approved workspace, by (dev, ino, mnt_id, birth time).
func checkWorkspace(fd int, want wire.DirIdentity) (wire.DirIdentity, error) {
	got, err := fsid.Dir(fd, want.Path)
	if err != nil {
		return got, wire.Errorf(wire.CodeIOFailed, "measure the workspace: %v", err)
	}
	if !got.Same(want) {
		return got, wire.Errorf(wire.CodeIdentityDrift,
			"the workspace descriptor is not the approved workspace %s", want.Path)
	}
	return got, nil
}

// enterCwd performs step 4: it resolves the approved cwd beneath the
// workspace descriptor without following any link or crossing a mount,
// checks its identity and makes it the working directory.
func enterCwd(ws int, want wire.DirIdentity) (wire.DirIdentity, error) {
	// openNoLinks retries EAGAIN: a concurrent rename or mount might have
	// raced the lookup.
	fd, err := openNoLinks(ws, want.Path, unix.O_DIRECTORY, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_XDEV)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP || err == unix.EXDEV:
		return wire.DirIdentity{}, wire.Errorf(wire.CodeIdentityDrift,
			"the cwd %q no longer resolves beneath the workspace: %v", want.Path, err)
	case err != nil:
		return wire.DirIdentity{}, wire.Errorf(wire.CodeSandboxUnavailable, "openat2 the cwd %q: %v", want.Path, err)
	}
	defer unix.Close(fd)
	got, err := fsid.Dir(fd, want.Path)
	if err != nil {
		return got, wire.Errorf(wire.CodeIOFailed, "measure the cwd: %v", err)
	}
	if !got.Same(want) {
		return got, wire.Errorf(wire.CodeIdentityDrift, "the cwd %q was replaced after approval", want.Path)
	}
	if err := unix.Fchdir(fd); err != nil {
		return got, wire.Errorf(wire.CodeIOFailed, "enter the cwd: %v", err)
	}
	return got, nil
}
