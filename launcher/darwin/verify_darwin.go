package darwin

import (
	"bytes"

	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
	"warrant/wire"
)

// openFlags opens by path without following a symlink in any component:
// the file opened is the file execve will find at the same path, and the
// path is the one the Seatbelt rules name. O_NONBLOCK keeps a FIFO planted
// at an approved path from blocking the launcher; O_NOCTTY keeps a
// terminal from becoming its controlling one.
const openFlags = unix.O_RDONLY | unix.O_NOFOLLOW_ANY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY

// checkWorkspace verifies the received workspace descriptor against the
// approved identity and, because Seatbelt rules name the workspace by
// path, that the path still leads to that same directory without a
// symlink anywhere on the way.
func checkWorkspace(fd int, want wire.DirIdentity) (wire.DirIdentity, *wire.Error) {
	got, err := fsid.Dir(fd, want.Path)
	if err != nil {
		return got, wire.Errorf(wire.CodeArgumentsInvalid, "check workspace descriptor: %v", err)
	}
	if !got.Same(want) {
		return got, wire.Errorf(wire.CodeIdentityDrift, "the workspace descriptor is not the approved directory %q", want.Path)
	}
	pfd, err := unix.Open(want.Path, openFlags|unix.O_DIRECTORY, 0)
	if err != nil {
		return got, wire.Errorf(wire.CodeIdentityDrift, "open workspace %q without following symlinks: %v", want.Path, err)
	}
	defer unix.Close(pfd)
	byPath, err := fsid.Dir(pfd, want.Path)
	if err != nil || !byPath.Same(got) {
		return got, wire.Errorf(wire.CodeIdentityDrift, "the path %q no longer leads to the approved workspace", want.Path)
	}
	return got, nil
}

// enterCwd opens the approved cwd beneath the verified workspace
// descriptor (checkCwd has already refused "..", absolute paths and empty
// components; O_NOFOLLOW_ANY refuses a symlink in any component), compares
// its identity (dev, ino, birth time; macOS has no mount id) with the
// approved one and makes it the working directory.
func enterCwd(ws int, want wire.DirIdentity) (wire.DirIdentity, *wire.Error) {
	fd, err := unix.Openat(ws, want.Path, openFlags|unix.O_DIRECTORY, 0)
	if err != nil {
		return wire.DirIdentity{}, wire.Errorf(wire.CodeIdentityDrift,
			"open cwd %q beneath the workspace without following symlinks: %v", want.Path, err)
	}
	defer unix.Close(fd)
	got, err := fsid.Dir(fd, want.Path)
	if err != nil {
		return got, wire.Errorf(wire.CodeIdentityDrift, "check cwd: %v", err)
	}
	if !got.Same(want) {
		return got, wire.Errorf(wire.CodeIdentityDrift, "cwd %q is no longer the approved directory", want.Path)
	}
	if err := unix.Fchdir(fd); err != nil {
		return got, wire.Errorf(wire.CodeIOFailed, "enter cwd %q: %v", want.Path, err)
	}
	return got, nil
}

// openPinned opens an approved file by path and checks its fstat identity.
// The descriptor is kept open until exec so that measure hashes the same
// inode.
func openPinned(want wire.FileIdentity) (int, *wire.Error) {
	fd, err := unix.Open(want.Path, openFlags, 0)
	if err != nil {
		return -1, wire.Errorf(wire.CodeIdentityDrift, "open %q without following symlinks: %v", want.Path, err)
	}
	got, err := fsid.Stat(fd, want.Path)
	if err != nil {
		return fd, wire.Errorf(wire.CodeIdentityDrift, "check %q: %v", want.Path, err)
	}
	if !fsid.SameFile(got, want) {
		return fd, wire.Errorf(wire.CodeIdentityDrift, "%q is not the approved file (its fstat identity changed)", want.Path)
	}
	return fd, nil
}

// measure hashes the file open at fd and compares identity and digest with
// the approved ones. It is the launcher's last check before exec; execve
// then opens the file again by path, which is the stated, unbound window.
func measure(fd int, want wire.FileIdentity) ([]byte, *wire.Error) {
	got, err := fsid.File(fd, want.Path)
	if err != nil {
		return nil, wire.Errorf(wire.CodeIdentityDrift, "hash %q: %v", want.Path, err)
	}
	if !fsid.SameFile(got, want) || !bytes.Equal(got.SHA256, want.SHA256) {
		return nil, wire.Errorf(wire.CodeIdentityDrift, "%q does not hash to the approved digest", want.Path)
	}
	return got.SHA256, nil
}

// refuseScript refuses to hand execve a file that starts with "#!": the
// kernel would then run whatever interpreter its first line names, which
// nobody pinned. A script runs only through its pinned interpreter, and
// that interpreter must not be a script itself.
func refuseScript(fd int, want wire.FileIdentity) *wire.Error {
	var magic [2]byte
	n, err := unix.Pread(fd, magic[:], 0)
	if err != nil {
		return wire.Errorf(wire.CodeIOFailed, "read %q: %v", want.Path, err)
	}
	if n == 2 && string(magic[:]) == "#!" {
		return wire.Errorf(wire.CodeArgumentsInvalid, "%q is a #! script but no interpreter is pinned for it", want.Path)
	}
	return nil
}
