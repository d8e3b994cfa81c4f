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

// fsRules is the ruleset step 9 enforces, made before step 2 so that the
// /etc entries are granted there: a Prepare's while a warm launcher waits.
type fsRules struct {
	fd       int
	running  int // landlockabi.Running, read once
	attr     ll.RulesetAttr
	prepared *wire.Prepare // its entries are granted; nil: none
}

// newRules creates the ruleset, handling every right the running ABI
// knows; the kernel makes its descriptor close-on-exec.
func newRules() (*fsRules, error) {
	abi := landlockabi.Running()
	if abi < landlockabi.TCP {
		return nil, wire.Errorf(wire.CodeSandboxUnavailable, "Landlock ABI %d is below the required %d", abi, landlockabi.TCP)
	}
	r := &fsRules{running: abi}
	known := knownABIs[r.preset()]
	r.attr = ll.RulesetAttr{HandledAccessFS: uint64(known.HandledAccessFS),
		HandledAccessNet: uint64(known.HandledAccessNet), Scoped: uint64(known.Scoped)}
	var err error
	if r.fd, err = ll.LandlockCreateRuleset(&r.attr, 0); err != nil {
		return nil, wire.Errorf(wire.CodeSandboxUnavailable, "create the Landlock ruleset: %v", err)
	}
	return r, nil
}

// preset is the ABI whose preset r handles: the running one, or the last
// preset for a newer kernel.
func (r *fsRules) preset() int { return min(r.running, len(knownABIs)-1) }

// prepare grants p's /etc entries, read and execute, each only while it
// is its pin (grantPath: one gone, unreachable or replaced is skipped).
func (r *fsRules) prepare(p *wire.Prepare) error {
	pins, g := &wire.Policy{Pins: p.Entries}, grant{rights: llReadExec & r.attr.HandledAccessFS, pinned: true, entry: true}
	for _, e := range p.Entries {
		if err := grantPath(r.fd, pins, e.Path, g); err != nil {
			return err
		}
	}
	r.prepared = p
	return nil
}

// restrictFS performs step 9: a Landlock domain handling every right the
// running ABI knows, with read+execute on the runtime paths and /etc's
// listed entries (granted at step 2), read+write on the workspace (by its
// verified descriptor), HOME, TMPDIR and any extra read-write path,
// read+write on the listed devices, both scopes, and no network rule but
// TCP connect to the egress port, if any. Below the floor it refuses;
// there is no best effort.
func restrictFS(req *wire.SpawnRequest, r *fsRules, ws int, ready *wire.Ready) error {
	if floor := max(landlockabi.TCP, int(req.Policy.MinLandlockABI)); r.running < floor {
		return wire.Errorf(wire.CodeSandboxUnavailable, "Landlock ABI %d is below the required %d", r.running, floor)
	}
	defer unix.Close(r.fd)
	fs := r.attr.HandledAccessFS
	if err := addRule(r.fd, ws, llReadWrite&fs); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "grant the workspace: %v", err)
	}
	grants := []struct {
		paths []string
		g     grant
	}{
		{req.Policy.ReadExec, grant{rights: llReadExec, pinned: true}},
		{req.Policy.ReadWrite, grant{rights: llReadWrite, pinned: true}},
		{req.Policy.Devices, grant{rights: llDevice, device: true, pinned: true}},
		{[]string{req.Home, req.Tmp}, grant{rights: llReadWrite, required: true}},
	}
	for _, list := range grants {
		for _, p := range list.paths {
			g := list.g
			g.rights &= fs
			if err := grantPath(r.fd, &req.Policy, p, g); err != nil {
				return err
			}
		}
	}
	// The broker's proxy: Landlock names a port, not an address, and the
	// broker answers every connect itself (seccomp, step 10); this is the
	// second wall. No port may be bound.
	if req.EgressPort != 0 {
		rule := ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(req.EgressPort)}
		if err := ll.LandlockAddNetPortRule(r.fd, &rule, 0); err != nil {
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
	if err := ll.LandlockRestrictSelf(r.fd, logs); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "enforce Landlock: %v", err)
	}
	ready.LandlockABI, ready.HandledFS, ready.HandledNet, ready.Scoped = uint8(r.preset()), fs, r.attr.HandledAccessNet, r.attr.Scoped
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
	case err == unix.ENOENT && !g.required, g.entry && (err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EACCES):
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
