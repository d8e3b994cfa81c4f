package wire

import (
	"fmt"
	"slices"
	"strings"
)

// Frame caps. A frame larger than its cap is refused before it is read.
const (
	MaxAgentFrame    = 1 << 20   // agent.sock and operator.sock
	MaxLauncherFrame = 256 << 10 // the launcher's request socket
)

// SpawnRequest is the broker's one request to the launcher. Alongside it,
// in the same SOCK_SEQPACKET message, the broker passes fds with SCM_RIGHTS
// in this exact order: the workspace directory, the stdout pipe, the
// stderr pipe, and when Snapshots is set the sealed memfd of the
// executable followed (for a script) by that of the interpreter. The
// launcher re-checks every one of them; it trusts nothing here that it can
// measure itself.
type SpawnRequest struct {
	// Protocol must be SpawnProtocol. A launcher of another protocol
	// refuses the request before it does anything: an older launcher, which
	// would execute at once after Ready without waiting for Proceed, does
	// not know the field; an older broker, which sends no Proceed, does not
	// send it.
	Protocol    uint8        `cbor:"protocol"`
	Argv        []string     `cbor:"argv"` // what the target sees, argv[0] first
	Env         []EnvVar     `cbor:"env"`
	Workspace   DirIdentity  `cbor:"workspace"`
	Cwd         DirIdentity  `cbor:"cwd"` // Path relative to the workspace
	Executable  FileIdentity `cbor:"executable"`
	Interpreter *Interpreter `cbor:"interpreter,omitempty"`
	Snapshots   bool         `cbor:"snapshots,omitempty"`
	Binding     Binding      `cbor:"binding"` // sealed-snapshot or in-place; in-place sends no snapshots
	Profile     Profile      `cbor:"profile"`
	Policy      Policy       `cbor:"policy"`
	Home        string       `cbor:"home"` // the action's private HOME
	Tmp         string       `cbor:"tmp"`  // the action's private TMPDIR
	// Protect lists the entries to bind in a private mount namespace
	// (parents first); empty: no namespace is made.
	Protect []ProtectBind `cbor:"protect,omitempty"`
	// EgressPort, when set, is the port of the broker's proxy on the
	// loopback address: the one TCP port Landlock lets the target connect
	// to, and the port the proxy variables of Env must name
	// (envpolicy.ProxyEnv). Absent: no network.
	EgressPort uint16 `cbor:"egress_port,omitempty"`
	// ObserveWrites has the launcher load the main seccomp program that
	// also notifies every open with write intent, which the broker lets
	// continue and records as a hint where it names a path outside the
	// writable scope (broker/internal/metadata): observed, never decided.
	ObserveWrites bool `cbor:"observe_writes,omitempty"`
	// AuditDenials has the launcher ask Landlock (ABI 7) to log the
	// target's refusals after its exec, and none of a domain the target
	// makes itself, for the broker to read (broker/internal/audit). Set
	// only where the broker reads them, so that no target writes to the
	// host's audit log unread.
	AuditDenials bool `cbor:"audit_denials,omitempty"`
}

// SpawnProtocol is the spawn protocol of this broker and launcher: a
// Prepare or none, one SpawnRequest, Refused or Ready, then (after Ready)
// the broker's Proceed, which the launcher waits for before it executes.
// 3 added the protected binds: a launcher of 2 would ignore them; 4 the
// egress port, the write observer and the audit request; 5 the Prepare.
const SpawnProtocol = 5

// Type implements Message.
func (*SpawnRequest) Type() MsgType { return TypeSpawnRequest }

func (r *SpawnRequest) validate() error {
	switch {
	case r.Protocol == 0: // absent: a broker that sends no Proceed
		return fmt.Errorf("protocol: invalid value 0")
	case r.Protocol != SpawnProtocol:
		return fmt.Errorf("protocol: %d is not the spawn protocol %d", r.Protocol, SpawnProtocol)
	}
	if len(r.Argv) == 0 {
		return fmt.Errorf("argv: empty")
	}
	err := firstErr(checkText("argv[0]", r.Argv[0], maxPath),
		checkArgs("argv", r.Argv[1:], 1),
		checkEnv(r.Env),
		checkAbs("workspace.path", r.Workspace.Path),
		CheckRelPath(r.Cwd.Path),
		r.Executable.validate("executable"),
		checkEnum(r.Profile),
		r.Policy.validate(),
		checkAbs("home", r.Home),
		checkAbs("tmp", r.Tmp),
		checkBinds(r.Protect))
	if err == nil && r.Interpreter != nil {
		err = r.Interpreter.validate()
	}
	if err == nil {
		err = checkEnum(r.Binding)
	}
	if err == nil && r.Binding != SealedSnapshot && r.Binding != InPlace {
		err = fmt.Errorf("binding: %s is not one a request may ask for", r.Binding)
	}
	if err == nil && r.Binding == InPlace && r.Snapshots {
		err = fmt.Errorf("binding: in-place takes no snapshots")
	}
	return err
}

// FDCount is the number of descriptors that must accompany r.
func (r *SpawnRequest) FDCount() int {
	switch {
	case !r.Snapshots:
		return 3
	case r.Interpreter != nil:
		return 5
	}
	return 4
}

// Prepare may come before the request: the /etc entries the request's
// policy will grant one by one, each with its pin, so that a launcher
// started ahead of its action opens, checks and grants them while it
// waits (about 2 ms of a launch on a small VM). It carries no
// descriptor. The request that follows must make exactly this Prepare
// (Policy.Prepared), or the launcher refuses it: what it granted early
// is what the request asks, bound to the same objects.
type Prepare struct {
	Protocol uint8     `cbor:"protocol"` // SpawnProtocol
	Entries  []PathPin `cbor:"entries"`  // sorted by path, each once
}

// Type implements Message.
func (*Prepare) Type() MsgType { return TypePrepare }

func (p *Prepare) validate() error {
	if p.Protocol != SpawnProtocol {
		return fmt.Errorf("protocol: %d is not the spawn protocol %d", p.Protocol, SpawnProtocol)
	}
	return checkPins("entries", p.Entries, maxEntries)
}

// Prepared is the Prepare of a request with policy p: its /etc entries
// with their pins.
func (p *Policy) Prepared() *Prepare {
	prep := &Prepare{Protocol: SpawnProtocol, Entries: make([]PathPin, 0, len(p.ReadEntries))}
	for _, e := range p.ReadEntries {
		if pin, ok := p.Pin(e); ok {
			prep.Entries = append(prep.Entries, pin)
		}
	}
	slices.SortFunc(prep.Entries, func(a, b PathPin) int { return strings.Compare(a.Path, b.Path) })
	prep.Entries = slices.Compact(prep.Entries)
	return prep
}

// Proceed is the broker's second and last message to the launcher, sent
// once it has checked Ready and the action's EXECUTING record is durable:
// the launcher executes only after it. Until then it has confined itself
// and replied, and nothing of the target has run.
type Proceed struct{}

// Type implements Message.
func (*Proceed) Type() MsgType { return TypeProceed }

func (*Proceed) validate() error { return nil }

// Ready is the launcher's reply once it is confined: the facts it
// measured and enforced. It then waits for Proceed; EOF on the
// close-on-exec reply socket after Proceed means the exec succeeded.
type Ready struct {
	LandlockABI       uint8       `cbor:"landlock_abi"`
	HandledFS         uint64      `cbor:"handled_fs"`                // LANDLOCK_ACCESS_FS_* bits handled
	HandledNet        uint64      `cbor:"handled_net"`               // LANDLOCK_ACCESS_NET_* bits handled
	Scoped            uint64      `cbor:"scoped"`                    // LANDLOCK_SCOPE_* bits
	SeccompDigest     []byte      `cbor:"seccomp_digest,omitempty"`  // Linux: SHA-256 of the loaded BPF program(s)
	SeatbeltDigest    []byte      `cbor:"seatbelt_digest,omitempty"` // macOS: SHA-256 of the applied SBPL profile
	Binding           Binding     `cbor:"binding"`
	BoundBy           BoundBy     `cbor:"bound_by,omitzero"`         // in-place only
	ExecutedSHA256    []byte      `cbor:"executed_sha256,omitempty"` // of the bytes handed to the kernel; in-place: none (not hashed here)
	InterpreterSHA256 []byte      `cbor:"interpreter_sha256,omitempty"`
	Workspace         DirIdentity `cbor:"workspace"`          // as measured on the received fd
	Cwd               DirIdentity `cbor:"cwd"`                // as measured after openat2
	MountNS           bool        `cbor:"mount_ns,omitempty"` // the target runs in a private mount namespace
	Protected         uint16      `cbor:"protected,omitzero"` // binds made there (an entry gone since the broker's record is skipped)
}

// Type implements Message.
func (*Ready) Type() MsgType { return TypeReady }

func (r *Ready) validate() error {
	err := firstErr(checkSandboxDigest(r.SeccompDigest, r.SeatbeltDigest),
		checkEnum(r.Binding),
		checkAbs("workspace.path", r.Workspace.Path),
		CheckRelPath(r.Cwd.Path))
	switch {
	case err != nil:
	case r.Binding == InPlace:
		if err = checkEnum(r.BoundBy); err == nil && (r.ExecutedSHA256 != nil || r.InterpreterSHA256 != nil) {
			err = fmt.Errorf("ready: in-place names what binds it and no digest it did not measure")
		}
	case r.Binding == Broken:
		err = fmt.Errorf("ready: a launcher never reports a broken binding")
	default:
		if r.BoundBy != 0 {
			err = fmt.Errorf("ready: bound_by is for in-place alone")
		} else {
			err = checkDigest("executed_sha256", r.ExecutedSHA256)
		}
	}
	if err == nil && r.Protected > 0 && !r.MountNS {
		err = fmt.Errorf("ready: binds without a mount namespace")
	}
	if err == nil && r.InterpreterSHA256 != nil {
		err = checkDigest("interpreter_sha256", r.InterpreterSHA256)
	}
	return err
}

// checkSandboxDigest requires exactly one platform filter digest:
// a Ready names the mechanism that was really applied.
func checkSandboxDigest(seccomp, seatbelt []byte) error {
	switch {
	case seccomp != nil && seatbelt != nil:
		return fmt.Errorf("ready: both a seccomp and a Seatbelt digest")
	case seatbelt != nil:
		return checkDigest("seatbelt_digest", seatbelt)
	}
	return checkDigest("seccomp_digest", seccomp)
}

// Refused means the launcher stopped before exec; nothing was executed.
type Refused struct {
	Code   Code   `cbor:"code"`
	Detail string `cbor:"detail"`
}

// Type implements Message.
func (*Refused) Type() MsgType { return TypeRefused }

func (r *Refused) validate() error {
	return firstErr(checkEnum(r.Code), checkText("detail", r.Detail, maxText))
}

// ExecFailed means every check passed and nothing was executed: the last
// step before execveat (clearing the signal mask) or execveat itself
// returned errno.
type ExecFailed struct {
	Errno uint32 `cbor:"errno"`
}

// Type implements Message.
func (*ExecFailed) Type() MsgType { return TypeExecFailed }

func (*ExecFailed) validate() error { return nil }
