package wire

import (
	"fmt"
	"slices"
	"strings"
)

// FileIdentity pins one regular file: where it was found, what fstat said
// about it, and the SHA-256 of its content.
type FileIdentity struct {
	Path    string `cbor:"path"` // canonical absolute path
	Dev     uint64 `cbor:"dev"`
	Ino     uint64 `cbor:"ino"`
	Mode    uint32 `cbor:"mode"` // st_mode, type bits included
	UID     uint32 `cbor:"uid"`
	Size    uint64 `cbor:"size"`
	MtimeNs int64  `cbor:"mtime_ns"`
	CtimeNs int64  `cbor:"ctime_ns"`
	SHA256  []byte `cbor:"sha256"`
}

func (f *FileIdentity) validate(field string) error {
	return firstErr(checkAbs(field+".path", f.Path), checkDigest(field+".sha256", f.SHA256))
}

// DirIdentity pins one directory by (dev, ino, mnt_id) and its birth time.
// The birth time matters: ext4 hands a freed inode number to the next
// directory created, so rm + mkdir gives the same (dev, ino, mnt_id); it
// is zero only where the filesystem records none. For a workspace the path
// is absolute; for a cwd it is the requested path relative to the
// workspace.
type DirIdentity struct {
	Path    string `cbor:"path"`
	Dev     uint64 `cbor:"dev"`
	Ino     uint64 `cbor:"ino"`
	MntID   uint64 `cbor:"mnt_id"`
	BirthNs int64  `cbor:"birth_ns,omitempty"`
}

// Same reports whether d and o name the same directory object.
func (d DirIdentity) Same(o DirIdentity) bool {
	return d.Dev == o.Dev && d.Ino == o.Ino && d.MntID == o.MntID && d.BirthNs == o.BirthNs
}

// Interpreter pins the interpreter of a "#!" script. Script and interpreter
// are approved as one tuple; the launcher executes the pinned interpreter
// itself and the kernel never resolves the "#!" line.
type Interpreter struct {
	File  FileIdentity `cbor:"file"`
	Arg   string       `cbor:"arg,omitempty"`   // the optional single argument on the "#!" line
	Chain []string     `cbor:"chain,omitempty"` // symlink hops to File.Path
}

func (in *Interpreter) validate() error {
	return firstErr(in.File.validate("interpreter.file"),
		checkText("interpreter.arg", in.Arg, maxPath),
		checkAbsList("interpreter.chain", in.Chain))
}

// Executable is the resolved identity of the requested program.
type Executable struct {
	Requested   string       `cbor:"requested"`       // as the agent wrote it
	Chain       []string     `cbor:"chain,omitempty"` // symlink hops from Requested to File.Path
	File        FileIdentity `cbor:"file"`
	Interpreter *Interpreter `cbor:"interpreter,omitempty"`
}

func (e *Executable) validate() error {
	err := firstErr(checkName("executable.requested", e.Requested),
		checkAbsList("executable.chain", e.Chain),
		e.File.validate("executable.file"))
	if err == nil && e.Interpreter != nil {
		err = e.Interpreter.validate()
	}
	return err
}

// EnvVar is one environment entry passed to a target.
type EnvVar struct {
	_     struct{} `cbor:",toarray"`
	Name  string
	Value string
}

func checkEnv(env []EnvVar) error {
	if err := checkLen("env", len(env), MaxEnvVars); err != nil {
		return err
	}
	seen := make(map[string]bool, len(env))
	for i, kv := range env {
		if err := at(firstErr(checkName(".name", kv.Name), checkText(".value", kv.Value, MaxArgBytes)), "env", i); err != nil {
			return err
		}
		if seen[kv.Name] {
			return fmt.Errorf("env: duplicate name %q", kv.Name)
		}
		seen[kv.Name] = true
	}
	return nil
}

// Policy is the sandbox policy of an action, apart from its per-action
// directories (see SpawnRequest.Home and .Tmp), so that it can be part of
// the fingerprint. The workspace is always read-write and is granted by
// the verified directory fd, never by path.
type Policy struct {
	ReadExec       []string `cbor:"read_exec"`        // runtime paths: read and execute
	ReadWrite      []string `cbor:"read_write"`       // extra read-write paths (normally none)
	Devices        []string `cbor:"devices"`          // character devices: read and write
	MinLandlockABI uint8    `cbor:"min_landlock_abi"` // refuse below this ABI
	// ReadEntries are read and execute too: the entries of /etc granted
	// one by one because it holds something withheld. The launcher skips
	// one that is gone or no longer its pin (a file replaced by rename)
	// instead of refusing: it grants less.
	ReadEntries []string `cbor:"read_entries,omitempty"`
	// Excluded are the paths beneath /etc that no grant covers (secrets),
	// for the card; the launcher reads nothing from it.
	Excluded []string `cbor:"excluded,omitempty"`
	// Pins are the identities the broker measured for every path above,
	// opened without following symlinks, sorted by path: the launcher
	// opens each path the same way and grants it only if it is still that
	// object, so a path swapped for a symlink or another directory after
	// approval is never granted. The fingerprint covers them.
	Pins []PathPin `cbor:"pins"`
}

// PathPin is the identity of one policy path.
type PathPin struct {
	Path string `cbor:"path"`
	Dev  uint64 `cbor:"dev"`
	Ino  uint64 `cbor:"ino"`
}

// Pin returns the pin of path p, or false.
func (p *Policy) Pin(path string) (PathPin, bool) {
	i, ok := slices.BinarySearchFunc(p.Pins, path, func(pin PathPin, path string) int { return strings.Compare(pin.Path, path) })
	if !ok {
		return PathPin{}, false
	}
	return p.Pins[i], true
}

func (p *Policy) validate() error {
	err := firstErr(checkAbsList("policy.read_exec", p.ReadExec),
		checkAbsList("policy.read_write", p.ReadWrite),
		checkAbsList("policy.devices", p.Devices),
		checkAbsCap("policy.read_entries", p.ReadEntries, maxEntries),
		checkAbsCap("policy.excluded", p.Excluded, maxExcluded))
	if err == nil {
		err = checkPins("policy.pins", p.Pins, 3*MaxPaths+maxEntries)
	}
	for _, list := range [][]string{p.ReadExec, p.ReadWrite, p.Devices, p.ReadEntries} {
		for _, path := range list {
			if _, ok := p.Pin(path); err == nil && !ok {
				err = fmt.Errorf("policy: %s has no pin", path)
			}
		}
	}
	return err
}

// CommandIdentity is everything a human approves. Its fingerprint is the
// SHA-256 of its canonical encoding.
type CommandIdentity struct {
	Executable   Executable  `cbor:"executable"`
	Argv         []string    `cbor:"argv"` // excludes argv[0]
	Cwd          DirIdentity `cbor:"cwd"`
	Workspace    DirIdentity `cbor:"workspace"`
	Profile      Profile     `cbor:"profile"`
	Env          []EnvVar    `cbor:"env"` // HOME and TMPDIR are per action and not listed
	Policy       Policy      `cbor:"policy"`
	PolicyDigest []byte      `cbor:"policy_digest"`
	// Binding is how the executable's bytes will be bound: in-place by
	// default, sealed-snapshot where the operator lists the executable
	// (<state>/bindings) or pins it per approval. Absent in identities of
	// brokers that knew only the sealed snapshot.
	Binding Binding `cbor:"binding,omitzero"`
	// Toolchain is the toolchain layout the executable lies in, when the
	// broker recognised one (broker/internal/toolchain): its root is among
	// the policy's read paths, its variables in Env.
	Toolchain *Toolchain `cbor:"toolchain,omitempty"`
	// GitIdentity is what the action's private HOME/.gitconfig says: the
	// operator's user.name and user.email, read at broker start; absent
	// when the operator has none (or none the broker accepts).
	GitIdentity *GitIdentity `cbor:"git_identity,omitempty"`
	// Egress is the exact list of destinations the action may reach
	// through the broker's proxy (canonical, sorted; ParseEgressEntry);
	// absent: no network at all. The fingerprint covers it, so a grant
	// with egress is another lease than the same command's without.
	Egress []string `cbor:"egress,omitempty"`
}

// MaxGitIdentity bounds each value of a GitIdentity, in bytes.
const MaxGitIdentity = 256

// GitIdentity is a git author and committer identity.
type GitIdentity struct {
	Name  string `cbor:"name"`
	Email string `cbor:"email"`
}

// Check refuses an identity git would not write as given, or that could
// say more than one config line: each value is 1 to MaxGitIdentity bytes
// of UTF-8 with no control character, no '<' or '>' (git's delimiters of
// the email) and no blank at either end (git trims those).
func (g *GitIdentity) Check() error {
	for _, v := range []struct{ field, s string }{{"git_identity.name", g.Name}, {"git_identity.email", g.Email}} {
		if v.s == "" {
			return fmt.Errorf("%s: empty", v.field)
		}
		if err := checkText(v.field, v.s, MaxGitIdentity); err != nil {
			return err
		}
		if strings.ContainsFunc(v.s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '<' || r == '>' }) {
			return fmt.Errorf("%s: holds a control character, '<' or '>'", v.field)
		}
		if strings.TrimSpace(v.s) != v.s {
			return fmt.Errorf("%s: starts or ends with a blank", v.field)
		}
	}
	return nil
}

func (c *CommandIdentity) validate() error {
	if c.Binding != 0 && c.Binding != SealedSnapshot && c.Binding != InPlace {
		return fmt.Errorf("identity: binding %s is not one an identity may hold", c.Binding)
	}
	if err := c.validateToolchain(); err != nil {
		return err
	}
	if c.GitIdentity != nil {
		if err := c.GitIdentity.Check(); err != nil {
			return err
		}
	}
	return firstErr(c.Executable.validate(),
		checkArgs("argv", c.Argv, 0),
		CheckRelPath(c.Cwd.Path),
		checkAbs("workspace.path", c.Workspace.Path),
		checkEnum(c.Profile),
		checkEnv(c.Env),
		c.Policy.validate(),
		checkDigest("policy_digest", c.PolicyDigest),
		checkEgress("egress", c.Egress))
}
