//go:build linux

package integration

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/internal/auditctl/audittest"
	"warrant/internal/landlockabi"
	"warrant/receipt"
	"warrant/wire"
)

// Landlock's refusals read from the kernel's audit records (source
// kernel-audit, broker/internal/audit): with audit enabled, as an
// operator would enable it (the broker never does), a write and a create
// outside the writable scope are named in --json and the signed receipt
// with the kernel's path; nothing is written on the host; an allowed run
// lists no kernel-audit refusal while the source watches.
func TestDenialsKernelAudit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("kernel-audit needs a root broker (CAP_AUDIT_READ) and root to enable audit")
	}
	if landlockabi.Running() < 7 {
		t.Skip("Landlock ABI 7 logs refusals; this kernel's is older")
	}
	audittest.Enable(t)
	b := rootDenialBench(t)
	victim := b.file(b.outside, "victim", 0o644)
	dir, err := filepath.EvalSymlinks(b.outside)
	if err != nil {
		t.Fatal(err)
	}
	created := filepath.Join(dir, "created")
	j := b.run("/bin/sh", "-c", `echo more >> "$1"; touch "$2"`, "sh", victim, created)
	want := []wire.Denial{
		{Effect: wire.EffectWrite, Call: "fs.write_file", Object: victim, Rule: wire.RuleOutsideScope},
		{Effect: wire.EffectCreate, Call: "fs.make_reg", Object: dir, Rule: wire.RuleOutsideScope},
	}
	if j.DenialsSeen == nil || !slices.Contains(j.DenialsSeen.Sources, "kernel-audit") {
		t.Fatalf("kernel-audit did not watch the action: %+v", j.DenialsSeen)
	}
	var got []shownDenial
	for _, d := range append(j.Denials, j.RoutineDenials...) {
		if d.Source == "kernel-audit" {
			got = append(got, d)
		}
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(d shownDenial) bool {
			return d.Effect == w.Effect.String() && d.Call == w.Call && d.Object == w.Object && d.Rule == w.Rule.String() &&
				d.Count >= 1 && d.First != "" && d.Remedy != ""
		}) {
			t.Errorf("--json does not name %+v from kernel-audit: %+v", w, got)
		}
	}
	rc, _ := b.receipt(*j.ReceiptID)
	if rc.Denials == nil || !slices.Contains(rc.Denials.Sources, "kernel-audit") {
		t.Fatalf("the receipt's denials: %+v", rc.Denials)
	}
	for _, w := range want {
		if !slices.ContainsFunc(rc.Denials.Records, func(r receipt.Denial) bool {
			return r.Effect == w.Effect && r.Call == w.Call && r.Object == w.Object && r.Rule == w.Rule &&
				r.Source == wire.SourceKernelAudit && r.Count >= 1 && r.First.WallUnixNs != 0
		}) {
			t.Errorf("the receipt does not name %+v from kernel-audit: %+v", w, rc.Denials.Records)
		}
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "x" {
		t.Errorf("%s on the host: %q, %v; want it unchanged", victim, data, err)
	}
	if _, err := os.Lstat(created); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists on the host: %v", created, err)
	}

	allowed := b.run("/usr/bin/touch", filepath.Join(b.ws, "inside"))
	if allowed.DenialsSeen == nil || !slices.Contains(allowed.DenialsSeen.Sources, "kernel-audit") {
		t.Fatalf("kernel-audit did not watch the allowed run: %+v", allowed.DenialsSeen)
	}
	for _, d := range append(allowed.Denials, allowed.RoutineDenials...) {
		if d.Source == "kernel-audit" {
			t.Errorf("an allowed run lists %+v", d)
		}
	}
	if _, err := os.Stat(filepath.Join(b.ws, "inside")); err != nil {
		t.Errorf("the allowed touch: %v", err)
	}

	// A runtime's probes of /proc and /sys, refused, are routine: listed
	// apart, with no read path to grant, one kind for every process.
	probed := b.run("/bin/sh", "-c", `/usr/bin/python3 -c "$1" && /usr/bin/python3 -c "$1"`, "sh", probeHostState)
	if strings.Count(probed.Stdout.Text, "fell back") != 2 {
		t.Fatalf("the probes: %q %q", probed.Stdout.Text, probed.Stderr.Text)
	}
	for _, d := range probed.Denials {
		if d.Source == "kernel-audit" {
			t.Errorf("a probe of the host's state is listed as a refusal that may explain a failure: %+v", d)
		}
	}
	if !slices.ContainsFunc(probed.RoutineDenials, func(d shownDenial) bool {
		return d.Source == "kernel-audit" && d.Call == "fs.read_file" && d.Object == "/proc/PID/cgroup" && d.Count >= 2 &&
			!strings.Contains(d.Remedy, "--read-path")
	}) {
		t.Errorf("the routine refusals do not hold both processes' read of /proc/self/cgroup as one: %+v", probed.RoutineDenials)
	}
	// Another process's environ is no probe: listed, its pid named.
	snooped := b.run("/usr/bin/python3", "-c", readOrRefused, "/proc/1/environ")
	if strings.TrimSpace(snooped.Stdout.Text) != "refused" {
		t.Fatalf("the read of /proc/1/environ: %q %q", snooped.Stdout.Text, snooped.Stderr.Text)
	}
	if !slices.ContainsFunc(snooped.Denials, func(d shownDenial) bool {
		return d.Source == "kernel-audit" && d.Object == "/proc/1/environ" && strings.Contains(d.Remedy, "no read path opens")
	}) {
		t.Errorf("the read of another process's environ is not listed with its pid: %+v %+v", snooped.Denials, snooped.RoutineDenials)
	}

	// With the kernel's records read, each forbidden effect is still named
	// once, and allowed work lists no refusal but routine ones.
	t.Run("each forbidden effect", func(t *testing.T) { denialsNameEach(t, rootDenialBench(t)) })
	t.Run("go build", func(t *testing.T) { goBuild(t, watchNoDenials(t, rootBench(t, shared(t)))) })
	t.Run("npm test", func(t *testing.T) { npmTest(t, watchNoDenials(t, rootBench(t, shared(t)))) })

	// A target's own domain is never logged: under the launcher's pid its
	// refusals would read as the sandbox's.
	own := b.file(b.ws, "own", 0o644)
	forged := b.run("/usr/bin/python3", "-c", ownDomain, own)
	if strings.TrimSpace(forged.Stdout.Text) != "refused" {
		t.Fatalf("the target's own domain did not refuse its write: %q %q", forged.Stdout.Text, forged.Stderr.Text)
	}
	for _, d := range append(forged.Denials, forged.RoutineDenials...) {
		if d.Source == "kernel-audit" {
			t.Errorf("a refusal of the target's own domain is claimed: %+v", d)
		}
	}
}

// probeHostState reads what runtimes read to size themselves, and does
// without it, as they do.
const probeHostState = `for p in ("/proc/self/cgroup", "/proc/meminfo"):
    try:
        open(p).read()
    except OSError:
        pass
print("fell back")
`

// readOrRefused reads argv[1] and prints whether it could.
const readOrRefused = `import sys
try:
    open(sys.argv[1]).read()
    print("read")
except PermissionError:
    print("refused")
`

// ownDomain has the target restrict itself with a Landlock domain of its
// own that handles file writes, then write to argv[1].
const ownDomain = `import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("QQQ", 1 << 1, 0, 0))
fd = libc.syscall(444, attr, 24, 0)
if fd < 0 or libc.syscall(446, fd, 0) != 0:
    sys.exit("landlock: errno %d" % ctypes.get_errno())
try:
    open(sys.argv[1], "a").write("x")
    print("written")
except PermissionError:
    print("refused")
`
