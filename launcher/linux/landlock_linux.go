package linux

import (
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"warrant/internal/landlockabi"
	"warrant/internal/retry"
	"warrant/wire"
)

// knownABIs[n] is go-landlock's preset for ABI n: every fs, net and scope right
// that ABI knows. Only its three masks are read; its Restrict (best effort, all
// threads) is never used. A kernel newer than the last preset is handled as
// that ABI: the rights it added stay unhandled, and Ready reports the preset's
// number, not the kernel's.
var knownABIs = [...]landlock.Config{1: landlock.V1, 2: landlock.V2, 3: landlock.V3, 4: landlock.V4, 5: landlock.V5,
	6: landlock.V6, 7: landlock.V7, 8: landlock.V8, 9: landlock.V9, 10: landlock.V10, 11: landlock.V11}

// Rights granted per kind of path, before masking with what is handled.
const (
	llRead      = ll.AccessFSReadFile | ll.AccessFSReadDir
	llReadExec  = llRead | ll.AccessFSExecute
	llFileOnly  = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	llDevice    = ll.AccessFSReadFile | ll.AccessFSWriteFile
	llNeverRW   = ll.AccessFSMakeChar | ll.AccessFSMakeBlock | ll.AccessFSMakeSock | ll.AccessFSIoctlDev | ll.AccessFSResolveUnix
	llReadWrite = ^uint64(0) &^ llNeverRW
)

// restrictFS performs step 9: a Landlock domain handling every right the
// running ABI knows, with read+execute on the runtime paths and /etc's
// listed entries, read+write on the workspace (by its verified
// descriptor), HOME, TMPDIR and any extra read-write path, read+write on
// the listed devices, both scopes, and no network rule but TCP connect to
// the egress port, if any. Below the floor it refuses; there is no best
// effort.
func restrictFS(req *wire.SpawnRequest, ws int, ready *wire.Ready) error {
	abi := landlockabi.Running()
	floor := max(landlockabi.TCP, int(req.Policy.MinLandlockABI))
	if abi < floor {
		return wire.Errorf(wire.CodeSandboxUnavailable, "Landlock ABI %d is below the required %d", abi, floor)
	}
	abi = min(abi, len(knownABIs)-1)
	known := knownABIs[abi]
	attr := ll.RulesetAttr{HandledAccessFS: uint64(known.HandledAccessFS),
		HandledAccessNet: uint64(known.HandledAccessNet), Scoped: uint64(known.Scoped)}
	fs := attr.HandledAccessFS
	// The kernel makes the ruleset descriptor close-on-exec.
	ruleset, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "create the Landlock ruleset: %v", err)
	}
	defer unix.Close(ruleset)
	if err := addRule(ruleset, ws, llReadWrite&fs); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "grant the workspace: %v", err)
	}
	grants := []struct {
		paths []string
		g     grant
	}{
		{req.Policy.ReadExec, grant{rights: llReadExec, pinned: true}},
		{req.Policy.ReadEntries, grant{rights: llReadExec, pinned: true, entry: true}},
		{req.Policy.ReadWrite, grant{rights: llReadWrite, pinned: true}},
		{req.Policy.Devices, grant{rights: llDevice, device: true, pinned: true}},
		{[]string{req.Home, req.Tmp}, grant{rights: llReadWrite, required: true}},
	}
	for _, list := range grants {
		for _, p := range list.paths {
			g := list.g
			g.rights &= fs
			if err := grantPath(ruleset, &req.Policy, p, g); err != nil {
				return err
			}
		}
	}
	// The broker's proxy: Landlock names a port, not an address, and the
	// broker answers every connect itself (seccomp, step 10); this is the
	// second wall. No port may be bound.
	if req.EgressPort != 0 {
		rule := ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(req.EgressPort)}
		if err := ll.LandlockAddNetPortRule(ruleset, &rule, 0); err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "grant the egress port: %v", err)
		}
	}
	// Only the calling thread is confined (not all, as go-landlock's AllThreads
	// would): Main locked it and step 12's execveat runs on it, so the target
	// starts inside the domain (exec ends the other threads); logs: step 9.
	var logs uint32
	if req.AuditDenials { // asked on ABI 7 only; below, the kernel refuses them
		logs = unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON | unix.LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF
	}
	if err := ll.LandlockRestrictSelf(ruleset, logs); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "enforce Landlock: %v", err)
	}
	ready.LandlockABI, ready.HandledFS, ready.HandledNet, ready.Scoped = uint8(abi), fs, attr.HandledAccessNet, attr.Scoped
	return nil
}

// addRule grants rights beneath the directory or file open as fd.
func addRule(ruleset, fd int, rights uint64) error {
	return ll.LandlockAddPathBeneathRule(ruleset, &ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: fd}, 0)
}

// grant is what one policy path receives.
type grant struct {
	rights   uint64
	required bool // a missing path refuses instead of granting nothing
	device   bool // the path must be a character device
	pinned   bool // a policy path: opened without following symlinks, and it must be its pin
	entry    bool // one of /etc's entries: one that is not its pin any more is skipped
}

// grantPath adds a path-beneath rule for p. Rights that only apply to
// directories are dropped for a file. A policy path is opened without following
// any symlink and granted only if it is the object the broker pinned: one
// swapped for a symlink or another directory since is never granted: it is
// refused, or, for one of /etc's entries (replaced by rename as resolv.conf
// is), skipped. HOME and TMPDIR are the broker's own directories in its state
// directory, which no target can reach, and are opened as they are named.
func grantPath(ruleset int, pol *wire.Policy, p string, g grant) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}
	if g.pinned {
		how.Resolve = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
	}
	var fd int
	err := retry.EAGAIN(func() (err error) { fd, err = unix.Openat2(unix.AT_FDCWD, p, how); return err })
	switch {
	case err == unix.ENOENT && !g.required, g.entry && (err == unix.ELOOP || err == unix.ENOTDIR):
		return nil
	case g.pinned && (err == unix.ELOOP || err == unix.ENOTDIR):
		return wire.Errorf(wire.CodeIdentityDrift, "policy path %s is not the approved object: a symlink is on its way", p)
	case err != nil:
		return wire.Errorf(wire.CodeSandboxUnavailable, "open policy path %s: %v", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "fstat policy path %s: %v", p, err)
	}
	if pin, ok := pol.Pin(p); g.pinned && (!ok || pin.Dev != st.Dev || pin.Ino != st.Ino) {
		if g.entry {
			return nil
		}
		return wire.Errorf(wire.CodeIdentityDrift, "policy path %s is no longer the approved object", p)
	}
	typ := st.Mode & unix.S_IFMT
	if g.device && typ != unix.S_IFCHR {
		return wire.Errorf(wire.CodeSandboxUnavailable, "policy device %s is not a character device", p)
	}
	if typ != unix.S_IFDIR {
		g.rights &= llFileOnly
	}
	if err := addRule(ruleset, fd, g.rights); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "grant %s: %v", p, err)
	}
	return nil
}
