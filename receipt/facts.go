package receipt

import (
	"encoding/hex"
	"time"

	"warrant/internal/profile"
	"warrant/wire"
)

// The receipt's JSON mirrors of wire values. wire types are CBOR-only; a
// receipt is JSON inside in-toto, so these carry the same facts with
// stable lowercase-camel names and digests in lowercase hex.

// File is a wire.FileIdentity.
type File struct {
	Path    string `json:"path"`
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Mode    uint32 `json:"mode"`
	UID     uint32 `json:"uid"`
	Size    uint64 `json:"size"`
	MtimeNs int64  `json:"mtimeNs"`
	CtimeNs int64  `json:"ctimeNs"`
	SHA256  string `json:"sha256"`
}

// Dir is a wire.DirIdentity.
type Dir struct {
	Path  string `json:"path"`
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	MntID uint64 `json:"mntId"`
}

// Interpreter is a wire.Interpreter.
type Interpreter struct {
	File  File     `json:"file"`
	Arg   string   `json:"arg,omitempty"`
	Chain []string `json:"chain,omitempty"`
}

// Policy is a wire.Policy.
type Policy struct {
	ReadExec       []string `json:"readExec"`
	ReadEntries    []string `json:"readEntries,omitempty"` // /etc's entries granted one by one
	Excluded       []string `json:"excluded,omitempty"`    // what of /etc no grant covers
	ReadWrite      []string `json:"readWrite"`
	Devices        []string `json:"devices"`
	MinLandlockABI uint8    `json:"minLandlockAbi"`
}

// Identity is a wire.CommandIdentity with its environment reduced to
// variable names: values are never written into a receipt.
type Identity struct {
	Requested    string       `json:"requested"`
	Chain        []string     `json:"chain,omitempty"`
	Executable   File         `json:"executable"`
	Interpreter  *Interpreter `json:"interpreter,omitempty"`
	Argv         []string     `json:"argv"`
	Cwd          Dir          `json:"cwd"`
	Workspace    Dir          `json:"workspace"`
	Profile      wire.Profile `json:"profile"`
	EnvNames     []string     `json:"envNames"`
	Policy       Policy       `json:"policy"`
	PolicyDigest string       `json:"policyDigest"`
}

func fileOf(f *wire.FileIdentity) File {
	return File{Path: f.Path, Dev: f.Dev, Ino: f.Ino, Mode: f.Mode, UID: f.UID, Size: f.Size,
		MtimeNs: f.MtimeNs, CtimeNs: f.CtimeNs, SHA256: hex.EncodeToString(f.SHA256)}
}

func dirOf(d *wire.DirIdentity) Dir {
	return Dir{Path: d.Path, Dev: d.Dev, Ino: d.Ino, MntID: d.MntID}
}

func list(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// IdentityOf mirrors c.
func IdentityOf(c *wire.CommandIdentity) Identity {
	id := Identity{
		Requested: c.Executable.Requested, Chain: c.Executable.Chain,
		Executable: fileOf(&c.Executable.File), Argv: list(c.Argv),
		Cwd: dirOf(&c.Cwd), Workspace: dirOf(&c.Workspace), Profile: c.Profile,
		EnvNames: []string{},
		Policy: Policy{ReadExec: list(c.Policy.ReadExec), ReadEntries: c.Policy.ReadEntries, Excluded: c.Policy.Excluded, ReadWrite: list(c.Policy.ReadWrite),
			Devices: list(c.Policy.Devices), MinLandlockABI: c.Policy.MinLandlockABI},
		PolicyDigest: hex.EncodeToString(c.PolicyDigest),
	}
	if in := c.Executable.Interpreter; in != nil {
		id.Interpreter = &Interpreter{File: fileOf(&in.File), Arg: in.Arg, Chain: in.Chain}
	}
	for _, kv := range c.Env {
		id.EnvNames = append(id.EnvNames, kv.Name)
	}
	return id
}

// Sandbox is what the launcher measured and enforced (wire.Ready).
type Sandbox struct {
	LandlockABI    uint8        `json:"landlockAbi"`
	HandledFS      uint64       `json:"handledFs"`
	HandledNet     uint64       `json:"handledNet"`
	Scoped         uint64       `json:"scoped"`
	SeccompDigest  string       `json:"seccompDigest,omitempty"`  // Linux
	SeatbeltDigest string       `json:"seatbeltDigest,omitempty"` // macOS
	Binding        wire.Binding `json:"binding"`
	// BoundBy says what bound an in-place executable's bytes:
	// "read-lease" (the broker's read lease, taken before it hashed the
	// file, held until the exec: no writer existed in between),
	// "unwritable" (the broker's uid cannot change the file), or
	// "script-read-by-path" (a script's bytes are read by its interpreter
	// by path and are not bound). A witness failing after the run, or a
	// lease lost before the exec, makes Binding "broken": what was executed
	// is not known.
	BoundBy           string `json:"boundBy,omitempty"`
	ExecutedSHA256    string `json:"executedSha256,omitempty"` // in place: the approved digest when read-lease or unwritable bound it, else absent
	InterpreterSHA256 string `json:"interpreterSha256,omitempty"`
	Workspace         Dir    `json:"workspace"`
	Cwd               Dir    `json:"cwd"`
}

// SandboxOf mirrors the launcher's Ready. An absent digest encodes as
// the empty string, which omitempty leaves out.
func SandboxOf(r *wire.Ready) *Sandbox {
	return &Sandbox{LandlockABI: r.LandlockABI, HandledFS: r.HandledFS, HandledNet: r.HandledNet, Scoped: r.Scoped,
		SeccompDigest: hex.EncodeToString(r.SeccompDigest), SeatbeltDigest: hex.EncodeToString(r.SeatbeltDigest),
		Binding: r.Binding, ExecutedSHA256: hex.EncodeToString(r.ExecutedSHA256), BoundBy: boundBy(r.BoundBy),
		InterpreterSHA256: hex.EncodeToString(r.InterpreterSHA256), Workspace: dirOf(&r.Workspace), Cwd: dirOf(&r.Cwd)}
}

func boundBy(b wire.BoundBy) string {
	if b == 0 {
		return ""
	}
	return b.String()
}

// Limits are the profile's values (docs/architecture.md §3.4) and what
// enforced each of them. MemoryBytes and Pids are present only when a
// cgroup applied them: a limit the host did not enforce is not claimed
// (EnforcedBy says "none" for it).
type Limits struct {
	WallNs      int64       `json:"wallNs"`
	GraceNs     int64       `json:"graceNs"`
	CPUSeconds  uint64      `json:"cpuSeconds"`
	Retain      int64       `json:"retain"`
	HardOutput  int64       `json:"hardOutput"`
	FileSize    uint64      `json:"fileSize"`
	OpenFiles   int         `json:"openFiles"`
	MemoryBytes uint64      `json:"memoryBytes,omitempty"`
	Pids        uint64      `json:"pids,omitempty"`
	EnforcedBy  Enforcement `json:"enforcedBy"`
}

// LimitsOf returns p's limits, enforced as e says: the memory and
// process-count figures only where e names a cgroup for them.
func LimitsOf(p wire.Profile, e Enforcement) Limits {
	l := profile.Of(p)
	lim := Limits{WallNs: int64(l.Wall), GraceNs: int64(profile.Grace), CPUSeconds: l.CPUSeconds,
		Retain: l.Retain, HardOutput: l.HardOutput, FileSize: l.FileSize, OpenFiles: profile.OpenFiles,
		EnforcedBy: e}
	if byCgroup(e.Memory) {
		lim.MemoryBytes = l.Memory
	}
	if byCgroup(e.Pids) {
		lim.Pids = l.Pids
	}
	return lim
}

// Time is one instant on both clocks: the broker's monotonic clock (for
// durations and ordering) and the wall clock (for people).
type Time struct {
	MonoNs     int64 `json:"monoNs"`
	WallUnixNs int64 `json:"wallUnixNs"`
}

// Stamp returns t on both clocks; mono is the broker's monotonic reading
// for t (for example time.Since(brokerStart)).
func Stamp(mono time.Duration, wall time.Time) Time {
	return Time{MonoNs: int64(mono), WallUnixNs: wall.UnixNano()}
}
