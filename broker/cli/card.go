package cli

import (
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"warrant/broker/internal/policy"
	"warrant/wire"
)

// writeCard prints an approval request for a human to decide: everything
// the approval binds, then the limitations, then how to decide.
func writeCard(w io.Writer, v *wire.ApprovalView) {
	id := &v.Identity
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("━━ Approval request %s ━━", v.ID)
	p("  goal         %s (revision %d)", v.Goal, v.GoalRevision)
	if v.Session != "" {
		p("  session      %s", v.Session)
	}
	p("  requested    %s", time.Unix(v.CreatedUnix, 0).Format(time.RFC3339))
	p("  executable   %s", strconv.Quote(id.Executable.Requested))
	writeFile(p, "  ", &id.Executable.File, id.Executable.Chain)
	if in := id.Executable.Interpreter; in != nil {
		arg := ""
		if in.Arg != "" {
			arg = " with argument " + strconv.Quote(in.Arg)
		}
		p("  interpreter  (from the #! line, pinned%s)", arg)
		writeFile(p, "  ", &in.File, in.Chain)
	}
	p("  binding      %s", bindingLine(id.Binding))
	p("  argv         %d argument(s) after argv[0], each literal (no shell):", len(id.Argv))
	for i, a := range id.Argv {
		p("    [%d] %s", i+1, strconv.Quote(a))
	}
	p("  cwd          %s  (dev %d, ino %d, mount %d)", strconv.Quote(id.Cwd.Path), id.Cwd.Dev, id.Cwd.Ino, id.Cwd.MntID)
	p("  workspace    %s  (dev %d, ino %d, mount %d)", id.Workspace.Path, id.Workspace.Dev, id.Workspace.Ino, id.Workspace.MntID)
	p("  profile      %s: %s", id.Profile, policy.ProfileLimits(id.Profile))
	names := make([]string, 0, len(id.Env))
	for _, kv := range id.Env {
		names = append(names, kv.Name+"="+strconv.Quote(kv.Value))
	}
	p("  environment  %s, plus a private HOME and TMPDIR", strings.Join(names, " "))
	p("  read+exec    %s", strings.Join(id.Policy.ReadExec, " "))
	rw := append([]string{id.Workspace.Path, "(private HOME and TMPDIR)"}, id.Policy.ReadWrite...)
	p("  read+write   %s", strings.Join(rw, " "))
	if c := cacheDir(id); c != "" {
		p("  cache        %s  (kept after the action, shared by every action of this workspace)", c)
	}
	p("  devices      %s", strings.Join(id.Policy.Devices, " "))
	p("  network      none")
	p("  policy       sha256 %s, Landlock ABI >= %d", hex.EncodeToString(id.PolicyDigest), id.Policy.MinLandlockABI)
	p("  fingerprint  %s", hex.EncodeToString(v.Fingerprint))
	p("  limitations")
	for line := range strings.SplitSeq(v.Limitations, "\n") {
		p("    %s", line)
	}
	p("  decide       broker approve %s [--uses N] [--ttl D] [--binding sealed-snapshot|in-place]   or   broker deny %s [--reason R]", v.ID, v.ID)
	p("")
}

func writeFile(p func(string, ...any), indent string, f *wire.FileIdentity, chain []string) {
	p("%s  resolved   %s", indent, f.Path)
	for _, hop := range chain {
		p("%s  via link   %s", indent, hop)
	}
	p("%s  sha256     %s", indent, hex.EncodeToString(f.SHA256))
	p("%s  file       %s uid %d, %d bytes, dev %d ino %d, mtime %s", indent, fs.FileMode(f.Mode&0o777), f.UID, f.Size, f.Dev, f.Ino,
		time.Unix(0, f.MtimeNs).UTC().Format(time.RFC3339Nano))
}

// bindingLine says what a binding means for the approved bytes.
func bindingLine(b wire.Binding) string {
	switch b {
	case wire.InPlace:
		return "in-place: the installed file itself runs (its own path stays true); bound by being unwritable by this uid, or by a witness re-measured after the run (a change is detected, not prevented)"
	case wire.SealedSnapshot:
		return "sealed-snapshot: a sealed copy whose SHA-256 is the approved digest runs (the program sees /memfd:… as its own path)"
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
