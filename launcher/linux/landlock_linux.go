package linux

import (
	"golang.org/x/sys/unix"

	"warrant/wire"
)

// Landlock ABI facts. maxKnownABI is the newest ABI whose rights this file
// knows; on a newer kernel the rights of maxKnownABI are handled and the
// reply says so. minABI is the floor: TCP rules need ABI 4.
const (
	maxKnownABI        = 10
	minABI             = 4
	erratumSignalScope = 1 << 1 // errata bit: ABI 6 signal scoping fixed
)

// Rights granted per kind of path, before masking with what is handled.
const (
	llRead      = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llReadExec  = llRead | unix.LANDLOCK_ACCESS_FS_EXECUTE
	llFileOnly  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llDevice    = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llNeverRW   = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	llReadWrite = ^uint64(0) &^ llNeverRW
)

// handled returns every fs, net and scope right Landlock ABI abi knows.
func handled(abi int) (fs, net, scoped uint64) {
	fsBits := 0
	if abi >= 1 {
		fsBits = 13 // execute … make_sym
	}
	for _, step := range []int{2, 3, 5, 9} { // refer, truncate, ioctl_dev, resolve_unix
		if abi >= step {
			fsBits++
		}
	}
	fs = 1<<fsBits - 1
	if abi >= 4 {
		net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 10 {
		net |= unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
	}
	if abi >= 6 {
		scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return fs, net, scoped
}

// restrictFS performs step 8: a Landlock domain handling every right the
// running ABI knows, with read+execute on the runtime paths, read+write on
// the workspace (by its verified descriptor), HOME, TMPDIR and any extra
// read-write path, read+write on the listed devices, no network rule and
// both scopes. Below the floor it refuses; there is no best effort.
func restrictFS(req *wire.SpawnRequest, ws int, ready *wire.Ready) error {
	abi := landlockABI()
	floor := max(minABI, int(req.Policy.MinLandlockABI))
	if abi < floor {
		return wire.Errorf(wire.CodeSandboxUnavailable, "Landlock ABI %d is below the required %d", abi, floor)
	}
	abi = min(abi, maxKnownABI)
	fs, net, scoped := handled(abi)
	ruleset, err := llCreateRuleset(&unix.LandlockRulesetAttr{Handled_access_fs: fs, Handled_access_net: net, Scoped: scoped})
	if err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "create the Landlock ruleset: %v", err)
	}
	defer unix.Close(ruleset)
	if err := llAddRule(ruleset, ws, llReadWrite&fs); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "grant the workspace: %v", err)
	}
	grants := []struct {
		paths []string
		g     grant
	}{
		{req.Policy.ReadExec, grant{rights: llReadExec}},
		{req.Policy.ReadWrite, grant{rights: llReadWrite}},
		{req.Policy.Devices, grant{rights: llDevice, device: true}},
		{[]string{req.Home, req.Tmp}, grant{rights: llReadWrite, required: true}},
	}
	for _, list := range grants {
		for _, p := range list.paths {
			g := list.g
			g.rights &= fs
			if err := grantPath(ruleset, p, g); err != nil {
				return err
			}
		}
	}
	if err := llRestrictSelf(ruleset); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "enforce Landlock: %v", err)
	}
	ready.LandlockABI, ready.HandledFS, ready.HandledNet, ready.Scoped = uint8(abi), fs, net, scoped
	return nil
}

// landlockABI returns the running ABI, counting a kernel whose ABI-6
// signal scoping lacks its erratum fix as ABI 5 (as go-landlock does).
func landlockABI() int {
	abi, err := llVersion(unix.LANDLOCK_CREATE_RULESET_VERSION)
	if err != nil {
		return 0
	}
	if abi >= 6 {
		if errata, err := llVersion(unix.LANDLOCK_CREATE_RULESET_ERRATA); err != nil || errata&erratumSignalScope == 0 {
			return 5
		}
	}
	return abi
}

// grant is what one policy path receives.
type grant struct {
	rights   uint64
	required bool // a missing path refuses instead of granting nothing
	device   bool // the path must be a character device
}

// grantPath adds a path-beneath rule for p. Rights that only apply to
// directories are dropped for a file.
func grantPath(ruleset int, p string, g grant) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT && !g.required {
		return nil
	}
	if err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "open policy path %s: %v", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "fstat policy path %s: %v", p, err)
	}
	typ := st.Mode & unix.S_IFMT
	if g.device && typ != unix.S_IFCHR {
		return wire.Errorf(wire.CodeSandboxUnavailable, "policy device %s is not a character device", p)
	}
	if typ != unix.S_IFDIR {
		g.rights &= llFileOnly
	}
	if err := llAddRule(ruleset, fd, g.rights); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "grant %s: %v", p, err)
	}
	return nil
}
