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
// for a "#!" script the pinned interpreter), checks the fstat identity,
// and binds the content to the approved digest in a sealed memfd: the
// broker's snapshot after Verify, or a copy made here.
func bindExecutable(req *wire.SpawnRequest, fds *received) (*execution, error) {
	exe, sum, err := bind(req.Executable, fds.exeSnap)
	if err != nil {
		return nil, err
	}
	e := &execution{fd: exe, argv: req.Argv, env: make([]string, len(req.Env)), keep: -1, listener: -1, sha256: sum}
	for i, kv := range req.Env {
		e.env[i] = kv.Name + "=" + kv.Value
	}
	if req.Interpreter == nil {
		return e, refuseScript(exe, req.Executable.Path)
	}
	interp, isum, err := bind(req.Interpreter.File, fds.interpSnap)
	if err != nil {
		return nil, err
	}
	if err := refuseScript(interp, req.Interpreter.File.Path); err != nil {
		return nil, err
	}
	// The kernel never reads the "#!" line: the pinned interpreter runs
	// with the script's sealed copy as an inherited descriptor path.
	argv := []string{req.Interpreter.File.Path}
	if req.Interpreter.Arg != "" {
		argv = append(argv, req.Interpreter.Arg)
	}
	argv = append(argv, fmt.Sprintf("/proc/self/fd/%d", exe))
	e.argv = append(argv, req.Argv[1:]...)
	e.fd, e.keep, e.interpSHA256 = interp, exe, isum
	return e, nil
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
	if !fsid.SameFile(got, want) {
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
