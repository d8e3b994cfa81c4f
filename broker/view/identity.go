package view

import (
	"encoding/hex"
	"time"

	"warrant/wire"
)

// Identity is a command identity (wire.CommandIdentity) under the JSON
// convention: everything an approval binds.
type Identity struct {
	Executable   Executable `json:"executable"`
	Argv         []string   `json:"argv"`
	Cwd          Dir        `json:"cwd"`
	Workspace    Dir        `json:"workspace"`
	Profile      string     `json:"profile"`
	Env          []EnvVar   `json:"env"`
	Policy       Policy     `json:"policy"`
	PolicyDigest string     `json:"policy_digest"`
	// Binding is null in identities of brokers that knew only the sealed
	// snapshot.
	Binding *string `json:"binding"`
	// GitIdentity is what the action's private HOME/.gitconfig says, or
	// null.
	GitIdentity *GitIdentity `json:"git_identity"`
	// Toolchain is null when the executable lies in no toolchain layout
	// the broker recognised.
	Toolchain *Toolchain `json:"toolchain"`
	// Egress is the exact list of "host:port" entries the action may
	// reach through the broker's proxy: what a request asked for, or an
	// approval granted; empty, no network at all.
	Egress []string `json:"egress"`
}

// GitIdentity is the operator's user.name and user.email.
type GitIdentity struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Executable is the resolved identity of the requested program.
type Executable struct {
	Requested   string       `json:"requested"`
	Chain       []string     `json:"chain"`
	File        File         `json:"file"`
	Interpreter *Interpreter `json:"interpreter"`
}

// Interpreter is the pinned interpreter of a "#!" script.
type Interpreter struct {
	File  File     `json:"file"`
	Arg   *string  `json:"arg"`
	Chain []string `json:"chain"`
}

// File is one regular file as fstat and SHA-256 found it.
type File struct {
	Path   string `json:"path"`
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Mode   uint32 `json:"mode"`
	UID    uint32 `json:"uid"`
	Size   uint64 `json:"size"`
	Mtime  string `json:"mtime"`
	Ctime  string `json:"ctime"`
	SHA256 string `json:"sha256"`
}

// Dir is a directory by (dev, ino, mnt_id) and its birth time, null where
// the filesystem records none.
type Dir struct {
	Path  string  `json:"path"`
	Dev   uint64  `json:"dev"`
	Ino   uint64  `json:"ino"`
	MntID uint64  `json:"mnt_id"`
	Birth *string `json:"birth"`
}

// EnvVar is one environment entry passed to the target.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Policy is the sandbox policy the approval binds.
type Policy struct {
	ReadExec       []string `json:"read_exec"`
	ReadEntries    []string `json:"read_entries"` // /etc's entries granted one by one
	Excluded       []string `json:"excluded"`     // what of /etc no grant covers
	ReadWrite      []string `json:"read_write"`
	Devices        []string `json:"devices"`
	MinLandlockABI uint8    `json:"min_landlock_abi"`
	Pins           []Pin    `json:"pins"`
}

// Pin is the identity of one policy path.
type Pin struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// IdentityOf is the view of id.
func IdentityOf(id *wire.CommandIdentity) Identity {
	v := Identity{Argv: NonNil(id.Argv), Cwd: dirOf(id.Cwd), Workspace: dirOf(id.Workspace), Profile: id.Profile.String(),
		Env: []EnvVar{}, PolicyDigest: hex.EncodeToString(id.PolicyDigest),
		Executable: Executable{Requested: id.Executable.Requested, Chain: NonNil(id.Executable.Chain), File: fileOf(&id.Executable.File)},
		Policy: Policy{ReadExec: NonNil(id.Policy.ReadExec), ReadEntries: NonNil(id.Policy.ReadEntries), Excluded: NonNil(id.Policy.Excluded),
			ReadWrite: NonNil(id.Policy.ReadWrite), Devices: NonNil(id.Policy.Devices),
			MinLandlockABI: id.Policy.MinLandlockABI, Pins: []Pin{}}}
	if in := id.Executable.Interpreter; in != nil {
		v.Executable.Interpreter = &Interpreter{File: fileOf(&in.File), Arg: Text(in.Arg), Chain: NonNil(in.Chain)}
	}
	if id.Binding != 0 {
		v.Binding = Text(id.Binding.String())
	}
	v.Toolchain = ToolchainOf(id.Toolchain)
	v.Egress = NonNil(id.Egress)
	if g := id.GitIdentity; g != nil {
		v.GitIdentity = &GitIdentity{Name: g.Name, Email: g.Email}
	}
	for _, kv := range id.Env {
		v.Env = append(v.Env, EnvVar{Name: kv.Name, Value: kv.Value})
	}
	for _, p := range id.Policy.Pins {
		v.Policy.Pins = append(v.Policy.Pins, Pin{Path: p.Path, Dev: p.Dev, Ino: p.Ino})
	}
	return v
}

func fileOf(f *wire.FileIdentity) File {
	return File{Path: f.Path, Dev: f.Dev, Ino: f.Ino, Mode: f.Mode, UID: f.UID, Size: f.Size,
		Mtime: Time(time.Unix(0, f.MtimeNs)), Ctime: Time(time.Unix(0, f.CtimeNs)), SHA256: hex.EncodeToString(f.SHA256)}
}

func dirOf(d wire.DirIdentity) Dir {
	v := Dir{Path: d.Path, Dev: d.Dev, Ino: d.Ino, MntID: d.MntID}
	if d.BirthNs != 0 {
		v.Birth = Text(Time(time.Unix(0, d.BirthNs)))
	}
	return v
}

// NonNil makes an empty list encode as [] rather than null: a list is
// always known, possibly empty.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
