package probeprog

import (
	"fmt"
	"strconv"
	"strings"
)

// Arg, as the first argument of `broker probe`, runs the target.
const Arg = "--warrant-probe-target"

// Who names the three processes of the battery, and the two programs of
// the limit checks.
const (
	Target     = "target"
	Child      = "child"
	Grandchild = "grandchild"
	// PidsProber forks children that only wait until a fork fails, and
	// reports how many it made and the errno (PidsLimit).
	PidsProber = "pids"
	// MemoryProber allocates and touches memory up to MemoryTry and
	// reports if it got there (MemoryLimit): it should be killed first.
	MemoryProber = "memory"
)

// The limit checks: each must fail at the limit the broker set for the
// probe, and the action's cgroup must have counted it.
const (
	PidsLimit   = "pids_limit"
	MemoryLimit = "memory_limit"
)

// The probe's own, small limits for the limit checks (the profiles' are
// 2 GiB and 256 and up, applied by the same code), and how far each
// prober tries past them.
const (
	ProbePids   = 48
	PidsTry     = 4 * ProbePids
	ProbeMemory = 64 << 20
	MemoryTry   = 4 * ProbeMemory
)

// The allowed effects: each must succeed and be read back from the host.
const (
	ReadInput       = "read_input"
	WriteWorkspace  = "write_workspace"
	RunRuntime      = "run_runtime"
	SpawnChild      = "spawn_child"
	SpawnGrandchild = "spawn_grandchild"
	// MetadataWorkspace: chmod, setxattr and utimensat of a workspace
	// file, read back from the host.
	MetadataWorkspace = "metadata_workspace"
)

// The forbidden effects: each must fail, from the target and from the
// grandchild, and the host object must show it.
const (
	WriteOutside  = "write_outside"
	ReadSecret    = "read_secret"
	SymlinkEscape = "symlink_escape"
	TCPConnect    = "tcp_connect"
	UDPSend       = "udp_send"
	UnixPathname  = "unix_pathname"
	UnixAbstract  = "unix_abstract"
	Signal        = "signal"
	LeakedFD      = "leaked_fd"
	EnvCanary     = "env_canary"
	UserNS        = "userns"
	Ptrace        = "ptrace"
	// MetadataOutside: chmod, chown, setxattr and utimensat of a file
	// outside the writable scope, by path and through an O_PATH
	// descriptor (fchownat, fchmodat2, utimensat with AT_EMPTY_PATH); the
	// host compares the file's mode, owner, xattrs and times.
	MetadataOutside = "metadata_outside"
	// ProtectedWrite: a write to ProtectedFile, which the launcher binds
	// read-only where it makes a mount namespace (judged only there).
	ProtectedWrite = "protected_write"
)

// Forbidden lists the forbidden effects in report order.
var Forbidden = []string{WriteOutside, ReadSecret, SymlinkEscape, TCPConnect, UDPSend,
	UnixPathname, UnixAbstract, Signal, LeakedFD, EnvCanary, UserNS, Ptrace, MetadataOutside}

// Attackers are the processes that attempt every forbidden effect.
var Attackers = []string{Target, Grandchild}

// Names of the files the battery uses in the workspace (its cwd).
const (
	InputFile   = "input"
	RuntimeFile = "runtime-out"
	EscapeLink  = "escape" // a symlink to the outside directory
	SocketFile  = "probe.sock"
	SecretFile  = "secret" // in the outside directory
	LeakFile    = "leak"   // in the outside directory
	MetaFile    = "meta"   // in the outside directory: the metadata victim
	// ProtectedFile is a git hook in the workspace, with ProtectedContent.
	ProtectedFile    = ".git/hooks/pre-commit"
	ProtectedContent = "#!/bin/sh\nexit 0\n"
	// MetaMode, MetaMtime and MetaXattr are what the target sets on its
	// workspace file OutFile(Target) (MetadataWorkspace).
	MetaMode  = 0o640
	MetaMtime = 1000000000
	MetaXattr = "user.warrant-probe"
)

// OutFile is the workspace file who writes.
func OutFile(who string) string { return "out-" + who }

// OutContent is what who writes there.
func OutContent(who string) string { return "warrant-probe wrote this as " + who + "\n" }

// RuntimeContent is what the runtime binary writes to RuntimeFile.
const RuntimeContent = "warrant-probe runtime"

// EscapeFile is the file who tries to create outside the workspace.
func EscapeFile(who string) string { return "written-by-" + who }

// LinkFile is the file who tries to create through the escape symlink.
func LinkFile(who string) string { return "via-link-" + who }

// Plan is what the broker tells the target: where the host objects are.
// It travels as the target's arguments.
type Plan struct {
	Who       string
	Outside   string // absolute directory outside every grant
	TCPPort   int    // a loopback TCP listener
	UDPPort   int    // a loopback UDP socket
	Abstract  string // an abstract unix socket name, without the leading NUL
	MarkerPID int    // a process outside the action
	LeakFD    int    // a descriptor the broker left open across exec
	LeakID    string // "dev:ino" of the file behind LeakFD
	Canaries  []string
	Runtime   string // absolute path of a trusted runtime binary, run with RuntimeArgs
}

// RuntimeArgs make the runtime binary (/usr/bin/env) run the shell from
// the sanitized PATH, which writes RuntimeContent to RuntimeFile.
var RuntimeArgs = []string{"sh", "-c", "printf '%s' '" + RuntimeContent + "' > " + RuntimeFile}

// Args encodes p as arguments after Arg.
func (p *Plan) Args() []string {
	return []string{p.Who, p.Outside, strconv.Itoa(p.TCPPort), strconv.Itoa(p.UDPPort), p.Abstract,
		strconv.Itoa(p.MarkerPID), strconv.Itoa(p.LeakFD), p.LeakID, strings.Join(p.Canaries, ","),
		p.Runtime}
}

// ParsePlan decodes the arguments Args made.
func ParsePlan(args []string) (*Plan, error) {
	if len(args) != 10 {
		return nil, fmt.Errorf("parse probe plan: want 10 arguments, got %d", len(args))
	}
	p := &Plan{Who: args[0], Outside: args[1], Abstract: args[4], LeakID: args[7], Runtime: args[9]}
	for i, dst := range map[int]*int{2: &p.TCPPort, 3: &p.UDPPort, 5: &p.MarkerPID, 6: &p.LeakFD} {
		n, err := strconv.Atoi(args[i])
		if err != nil {
			return nil, fmt.Errorf("parse probe plan: %w", err)
		}
		*dst = n
	}
	if args[8] != "" {
		p.Canaries = strings.Split(args[8], ",")
	}
	switch p.Who {
	case Target, Child, Grandchild, PidsProber, MemoryProber, EgressProber:
	default:
		return nil, fmt.Errorf("parse probe plan: unknown process %q", p.Who)
	}
	return p, nil
}

// Line is one reported attempt.
type Line struct {
	Who, Check string
	Done       bool // the effect happened, as the process saw it
	Detail     string
}

// ParseLines reads the target's output; malformed lines are skipped (a
// check without its line fails).
func ParseLines(out string) []Line {
	var ls []Line
	for _, s := range strings.Split(out, "\n") {
		f := strings.SplitN(s, " ", 4)
		if len(f) < 3 || (f[2] != "done" && f[2] != "failed") {
			continue
		}
		l := Line{Who: f[0], Check: f[1], Done: f[2] == "done"}
		if len(f) == 4 {
			l.Detail = f[3]
		}
		ls = append(ls, l)
	}
	return ls
}
