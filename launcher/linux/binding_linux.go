package linux

import (
	"bytes"
	"errors"
	"fmt"
	"path"

	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
	"warrant/internal/snapshot"
	"warrant/wire"
)

// bindExecutable performs step 5: it re-opens the approved executable (and
// for a "#!" script the pinned interpreter) and checks the fstat identity.
// Sealed snapshot: it binds the content to the approved digest in a sealed
// memfd (the broker's snapshot after Verify, or a copy made here), and a
// script runs from its sealed copy as an inherited descriptor path. In
// place: the installed files themselves are executed through the
// verified descriptor, so the program's own location is its real path,
// and a script runs under its real path to find its sibling files; what
// binds the bytes is reported (unwritable, or a witness the broker checks
// again after the exec).
func bindExecutable(req *wire.SpawnRequest, fds *received) (*execution, error) {
	inPlace := req.Binding == wire.InPlace
	var exe int
	var sum []byte
	var by wire.BoundBy
	var err error
	if inPlace {
		exe, by, err = openInPlace(req.Executable)
	} else {
		exe, sum, err = bind(req.Executable, fds.exeSnap)
	}
	if err != nil {
		return nil, err
	}
	e := &execution{fd: exe, argv: req.Argv, env: make([]string, len(req.Env)), keep: -1, listener: -1, sha256: sum, boundBy: by}
	for i, kv := range req.Env {
		e.env[i] = kv.Name + "=" + kv.Value
	}
	if req.Interpreter == nil {
		return e, refuseScript(exe, req.Executable.Path)
	}
	var interp int
	var iby wire.BoundBy
	script := req.Executable.Path // in place, the interpreter opens it by its real path
	if inPlace {
		unix.Close(exe)
		interp, iby, err = openInPlace(req.Interpreter.File)
	} else {
		interp, e.interpSHA256, err = bind(req.Interpreter.File, fds.interpSnap)
		script, e.keep = fmt.Sprintf("/proc/self/fd/%d", exe), exe // the kernel never reads the "#!" line
	}
	if err != nil {
		return nil, err
	}
	if err := refuseScript(interp, req.Interpreter.File.Path); err != nil {
		return nil, err
	}
	argv := []string{req.Interpreter.File.Path}
	if req.Interpreter.Arg != "" {
		argv = append(argv, req.Interpreter.Arg)
	}
	e.argv = append(append(argv, script), req.Argv[1:]...)
	e.fd, e.boundBy = interp, max(by, iby) // in place: a witness if either needs one
	return e, nil
}

// openInPlace opens want.Path without following any link and checks its
// fstat identity; the descriptor is what execveat runs.
func openInPlace(want wire.FileIdentity) (int, wire.BoundBy, error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, want.Path, how)
	if err != nil {
		return -1, 0, wire.Errorf(wire.CodeIdentityDrift, "open the approved %s: %v", want.Path, err)
	}
	got, err := fsid.Stat(fd, want.Path)
	if err == nil && !fsid.SameFile(got, seen(want)) {
		err = fmt.Errorf("%s changed after approval", want.Path)
	}
	if err != nil {
		unix.Close(fd)
		return -1, 0, wire.Errorf(wire.CodeIdentityDrift, "%v", err)
	}
	by := wire.Witness
	if uid := uint32(unix.Geteuid()); uid != 0 && got.UID != uid && got.Mode&0o022 == 0 {
		by = wire.Unwritable
	}
	return fd, by, nil
}

// bind opens want.Path without following any link, checks its fstat
// identity and returns a sealed memfd holding exactly the approved bytes.
func bind(want wire.FileIdentity, snap int) (int, []byte, error) {
	// With the broker's snapshot the file is only measured (O_PATH);
	// otherwise its bytes are copied from it.
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if snap < 0 {
		flags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	}
	how := &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, want.Path, how)
	if err != nil {
		return -1, nil, wire.Errorf(wire.CodeIdentityDrift, "open the approved %s: %v", want.Path, err)
	}
	defer unix.Close(fd)
	got, err := fsid.Stat(fd, want.Path)
	if err != nil {
		return -1, nil, wire.Errorf(wire.CodeIdentityDrift, "measure %s: %v", want.Path, err)
	}
	if !fsid.SameFile(got, seen(want)) {
		return -1, nil, wire.Errorf(wire.CodeIdentityDrift, "%s changed after approval", want.Path)
	}
	var sum [32]byte
	if snap >= 0 {
		sum, err = snapshot.Verify(snap, int64(want.Size))
		if err != nil {
			return -1, nil, bad("the snapshot of %s: %v", want.Path, err)
		}
	} else if snap, sum, err = snapshot.Create(fd, int64(want.Size), path.Base(want.Path)); err != nil {
		if errors.Is(err, snapshot.ErrNoExecMemfd) {
			return -1, nil, wire.Errorf(wire.CodeSandboxUnavailable, "%v; exec by path is never used", err)
		}
		return -1, nil, wire.Errorf(wire.CodeIdentityDrift, "snapshot %s: %v", want.Path, err)
	}
	if !bytes.Equal(sum[:], want.SHA256) {
		return -1, nil, wire.Errorf(wire.CodeIdentityDrift, "the bytes of %s are not the approved bytes", want.Path)
	}
	return snap, sum[:], nil
}

// refuseScript refuses to execute a "#!" file directly: the kernel would
// resolve its interpreter by path, outside the approved tuple.
func refuseScript(fd int, name string) error {
	var magic [2]byte
	n, err := unix.Pread(fd, magic[:], 0)
	if err != nil {
		return wire.Errorf(wire.CodeIOFailed, "read %s: %v", name, err)
	}
	if n == 2 && string(magic[:]) == "#!" {
		return bad("%s is a #! script but the request pins no interpreter", name)
	}
	return nil
}
