package cli

import (
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"warrant/broker/view"
	"warrant/wire"
)

// writeCard prints an approval request for a human to decide: the
// command, what runs and where, the limitations (the threat model in
// words: what it can read, write and reach, its limits), then how to
// decide. It fits in 20 lines for an ordinary command; every environment
// value is on it but the cache's (named: the limitations say where the
// cache is). --full adds every number the approval binds (file and
// directory identities, the cache's values, the paths, policy digest,
// fingerprint) and each argument on its own line.
// Words are quoted (view.CommandLine, strconv.Quote) so that no byte of
// the request reaches the terminal as is.
func (e *env) writeCard(w io.Writer, v *wire.ApprovalView) {
	id := &v.Identity
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	session := ""
	if v.Session != "" {
		session = ", session " + strconv.Quote(v.Session)
	}
	p("━━ Approval request %s ━━ goal %s (revision %d)%s, requested %s", v.ID, v.Goal, v.GoalRevision, session,
		time.Unix(v.CreatedUnix, 0).UTC().Format(time.RFC3339))
	p("  command      %s", view.CommandLine(id.Executable.Requested, id.Argv))
	p("  executable   %s", fileLine(&id.Executable.File, id.Executable.Chain))
	if in := id.Executable.Interpreter; in != nil {
		arg := ""
		if in.Arg != "" {
			arg = ", with argument " + strconv.Quote(in.Arg)
		}
		p("  interpreter  %s (pinned from the #! line%s)", fileLine(&in.File, in.Chain), arg)
	}
	p("  binding      %s", bindingLine(id.Binding))
	if id.Toolchain != nil {
		p("  toolchain    %s", toolchainLine(id.Toolchain)) // toolchains.go
	}
	p("  where        cwd %s in the workspace %s, profile %s", strconv.Quote(id.Cwd.Path), id.Workspace.Path, id.Profile)
	if e.full {
		e.writeFullIdentity(p, v)
	} else {
		p("  environment  %s", envLine(id))
	}
	if g := id.GitIdentity; g != nil {
		p("  git identity %s <%s> (the private HOME's .gitconfig: user.name and user.email only)", plain(g.Name), plain(g.Email))
	}
	head := "limitations"
	for line := range strings.SplitSeq(strings.TrimRight(v.Limitations, "\n"), "\n") {
		p("  %-12s %s", head, line)
		head = ""
	}
	st := stateFlag(e.state)
	p("  decide       broker approve %s%s [--uses N] [--ttl D]   or   broker deny %s%s [--reason R]", v.ID, st, v.ID, st)
	p("")
}

// envLine is the environment in one line: every value, but for the
// variables that point into the workspace's cache, which are named (the
// limitations say where the cache is; --full shows their values).
func envLine(id *wire.CommandIdentity) string {
	cache := cacheDir(id)
	var set, cached []string
	for _, kv := range id.Env {
		if cache != "" && strings.HasPrefix(kv.Value, cache+"/") {
			cached = append(cached, kv.Name)
		} else {
			set = append(set, kv.Name+"="+strconv.Quote(kv.Value))
		}
	}
	line := strings.Join(set, " ")
	if len(cached) > 0 {
		line += ", " + strings.Join(cached, " ") + " into the cache"
	}
	return line + ", a private HOME and TMPDIR"
}

// writeFullIdentity prints the numbers the approval binds beyond what the
// short card shows.
func (e *env) writeFullIdentity(p func(string, ...any), v *wire.ApprovalView) {
	id := &v.Identity
	p("  argv         %d argument(s) after argv[0], each literal (no shell):", len(id.Argv))
	for i, a := range id.Argv {
		p("    [%d] %s", i+1, strconv.Quote(a))
	}
	writeFileNumbers(p, "executable", &id.Executable.File)
	if in := id.Executable.Interpreter; in != nil {
		writeFileNumbers(p, "interpreter", &in.File)
	}
	p("  cwd          %s  (dev %d, ino %d, mount %d)", strconv.Quote(id.Cwd.Path), id.Cwd.Dev, id.Cwd.Ino, id.Cwd.MntID)
	p("  workspace    %s  (dev %d, ino %d, mount %d)", id.Workspace.Path, id.Workspace.Dev, id.Workspace.Ino, id.Workspace.MntID)
	p("  environment  a private HOME and TMPDIR, and:")
	for _, kv := range id.Env {
		p("    %s=%s", kv.Name, strconv.Quote(kv.Value))
	}
	p("  read+exec    %s", strings.Join(id.Policy.ReadExec, " "))
	if pol := &id.Policy; len(pol.ReadEntries)+len(pol.Excluded) > 0 {
		p("  /etc entries %s", strings.Join(pol.ReadEntries, " "))
		p("  withheld     %s", strings.Join(pol.Excluded, " "))
	}
	rw := append([]string{id.Workspace.Path, "(private HOME and TMPDIR)"}, id.Policy.ReadWrite...)
	p("  read+write   %s", strings.Join(rw, " "))
	if c := cacheDir(id); c != "" {
		p("  cache        %s  (kept after the action, shared by every action of this workspace)", c)
	}
	p("  devices      %s", strings.Join(id.Policy.Devices, " "))
	p("  network      none")
	p("  policy       sha256 %s, Landlock ABI >= %d", hex.EncodeToString(id.PolicyDigest), id.Policy.MinLandlockABI)
	p("  fingerprint  %s", hex.EncodeToString(v.Fingerprint))
	p("  binding      approve --binding sealed-snapshot|in-place pins the other binding; <state>/bindings lists executables sealed by default")
}

// plain is s as it is when every byte of it prints as itself, else
// quoted.
func plain(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}

// fileLine is a program file in one line: its canonical path, the links
// that lead to it and its digest.
func fileLine(f *wire.FileIdentity, chain []string) string {
	via := ""
	if len(chain) > 0 {
		via = " (via " + strings.Join(chain, " → ") + ")"
	}
	return fmt.Sprintf("%s%s sha256 %s", f.Path, via, hex.EncodeToString(f.SHA256))
}

// writeFileNumbers prints the fstat identity the approval binds of a
// program file.
func writeFileNumbers(p func(string, ...any), what string, f *wire.FileIdentity) {
	p("  %-12s %s uid %d, %d bytes, dev %d ino %d, mtime %s, ctime %s", what, fs.FileMode(f.Mode&0o777), f.UID, f.Size, f.Dev, f.Ino,
		time.Unix(0, f.MtimeNs).UTC().Format(time.RFC3339Nano), time.Unix(0, f.CtimeNs).UTC().Format(time.RFC3339Nano))
}

// bindingLine says what a binding means for the approved bytes.
func bindingLine(b wire.Binding) string {
	switch b {
	case wire.InPlace:
		return "in-place: the installed file itself runs (its own path is real); no one can write it from its hash to the exec (a read lease, " +
			"or this uid cannot) nor while it runs, and it is measured again after; a script's own bytes are read by path"
	case wire.SealedSnapshot:
		return "sealed-snapshot: a sealed copy with exactly this digest runs; it sees /memfd:… as its own path, so running itself again by that path fails"
	}
	return b.String()
}

// cacheDir is the read-write path GOCACHE points into, the workspace's
// cache (broker/internal/caches), or "".
func cacheDir(id *wire.CommandIdentity) string {
	for _, kv := range id.Env {
		if kv.Name != "GOCACHE" {
			continue
		}
		for _, rw := range id.Policy.ReadWrite {
			if strings.HasPrefix(kv.Value, rw+"/") {
				return rw
			}
		}
	}
	return ""
}
