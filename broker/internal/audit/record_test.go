package audit

import (
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// Records as this kernel (Linux 6.18, Landlock ABI 7) sent them to the
// read-only multicast group for `broker run` of a shell that touched a
// file outside the workspace, read /root/.bashrc and listed /root.
const (
	realMakeReg = `audit(1796590895.647:50): domain=1d4fb8fb7 blockers=fs.make_reg path="/tmp/capout" dev="vda" ino=9977911`
	realDomain  = `audit(1796590895.647:50): domain=1d4fb8fb7 status=allocated mode=enforcing pid=22791 uid=0 exe=2F6D656D66643A77617272616E742D6C61756E63686572202864656C6574656429 comm="9"`
	realRead    = `audit(1796590895.651:52): domain=1d4fb8fb7 blockers=fs.read_file path="/root/.bashrc" dev="vda" ino=1225`
	realIoctl   = `audit(1796590895.651:55): domain=1d4fb8fb7 blockers=fs.ioctl_dev path="/dev/null" dev="devtmpfs" ino=3 ioctlcmd=0x5401`
	realReadDir = `audit(1796590895.651:56): domain=1d4fb8fb7 blockers=fs.read_dir path="/root" dev="vda" ino=1224`
	realFreed   = `audit(1796590896.179:60): domain=1d4fb8fb7 status=deallocated denials=8`
	// Go's runtime reading /proc/self/cgroup in a go build.
	realProcRead = `audit(1796590895.652:57): domain=1d4fb8fb7 blockers=fs.read_file path="/proc/458/cgroup" dev="proc" ino=4026532210`
)

func TestParseRealRecords(t *testing.T) {
	at := time.Unix(1796590895, 647*int64(time.Millisecond))
	for _, c := range []struct {
		typ    uint16
		text   string
		effect wire.DenialEffect
		call   string
		object string
		rule   wire.DenialRule
	}{
		{typeLandlockAccess, realMakeReg, wire.EffectCreate, "fs.make_reg", "/tmp/capout", wire.RuleOutsideScope},
		{typeLandlockAccess, realRead, wire.EffectRead, "fs.read_file", "/root/.bashrc", wire.RuleLandlock},
		{typeLandlockAccess, realIoctl, wire.EffectKernel, "fs.ioctl_dev", "/dev/null", wire.RuleLandlock},
		{typeLandlockAccess, realReadDir, wire.EffectRead, "fs.read_dir", "/root", wire.RuleLandlock},
		{typeLandlockAccess, realProcRead, wire.EffectRead, "fs.read_file", "/proc/PID/cgroup", wire.RuleLandlock},
	} {
		r, ok := parse(c.typ, []byte(c.text+"\x00"))
		want := wire.Denial{Effect: c.effect, Call: c.call, Object: c.object, Rule: c.rule, Source: wire.SourceKernelAudit}
		if !ok || !r.access || r.domain != 0x1d4fb8fb7 || r.denial != want {
			t.Errorf("%s: %v %+v, want %+v", c.text, ok, r, want)
		}
	}
	if r, ok := parse(typeLandlockAccess, []byte(realMakeReg)); !ok || !r.at.Equal(at) {
		t.Errorf("the time: %v", r.at)
	}
	d, ok := parse(typeLandlockDomain, []byte(realDomain))
	if !ok || d.access || d.status != "allocated" || d.pid != 22791 || d.domain != 0x1d4fb8fb7 {
		t.Errorf("domain: %v %+v", ok, d)
	}
	if f, _ := fields(realDomain[len("audit(1796590895.647:50): "):]); f["exe"] != "/memfd:warrant-launcher (deleted)" {
		t.Errorf("the hex exe: %q", f["exe"])
	}
	if d, ok := parse(typeLandlockDomain, []byte(realFreed)); !ok || d.status != "deallocated" || d.pid != 0 {
		t.Errorf("freed: %v %+v", ok, d)
	}
}

// A path the target chose: audit writes one with a space, a quote or a
// byte outside printable ASCII as hex; such a path cannot end a quoted
// value early or add a field of its own.
func TestParseHostilePaths(t *testing.T) {
	for hexed, want := range map[string]string{
		`2F746D702F6361706F75742F6120622271`:               `/tmp/capout/a b"q`,
		`2F746D702F78207069643D3120646F6D61696E3D32`:       `/tmp/x pid=1 domain=2`,
		`2F746D702F1B5B324A0A`:                             "/tmp/\x1b[2J\n",
		`2F746D702FFF`:                                     "/tmp/\xff",
		`2F746D702FE280AE6770682E657865`:                   "/tmp/\u202egph.exe",
		`2F746D702F2064616464723D312E322E332E342064657374`: "/tmp/ daddr=1.2.3.4 dest",
	} {
		r, ok := parse(typeLandlockAccess, []byte(`audit(1.000:1): domain=5 blockers=fs.write_file path=`+hexed+` dev="vda" ino=2`))
		if !ok || r.domain != 5 || r.denial.Object != want || r.denial.Effect != wire.EffectWrite {
			t.Errorf("%s: %v %+v, want %q", hexed, ok, r.denial, want)
		}
		l := wire.Denials{Sources: []string{"kernel-audit"}, Total: 1,
			Counts:  []wire.DenialCount{{Effect: r.denial.Effect, Call: r.denial.Call, Rule: r.denial.Rule, Source: r.denial.Source, Count: 1}},
			Records: []wire.Denial{r.denial}}
		l.Records[0].Object, l.Records[0].Count = wire.DenialObject(r.denial.Object), 1
		if err := l.Validate(); err != nil {
			t.Errorf("%s: %v", hexed, err)
		}
	}
	// A later key of the same name never replaces the kernel's; a value
	// cut short, a bad domain or header, or another type is no record.
	if r, _ := parse(typeLandlockAccess, []byte(`audit(1.000:1): domain=5 blockers=fs.read_file path="/a" path="/b"`)); r.denial.Object != "/a" {
		t.Errorf("a second path: %+v", r.denial)
	}
	for _, bad := range []string{
		`audit(1.000:1): domain=5 blockers=fs.read_file path="/a`,
		`audit(1.000:1): domain=zz blockers=fs.read_file path="/a"`,
		`audit(1.000:1): domain=0 blockers=fs.read_file path="/a"`,
		`audit(1.000:1): domain=5 path="/a"`,
		`audit(x): domain=5 blockers=fs.read_file`,
		`domain=5 blockers=fs.read_file`,
		`audit(1.000:1): domain=5 status=allocated pid=-3`,
		`audit(1.000:1): domain=5 status=other pid=3`,
	} {
		typ := uint16(typeLandlockAccess)
		if strings.Contains(bad, "status") {
			typ = typeLandlockDomain
		}
		if r, ok := parse(typ, []byte(bad)); ok {
			t.Errorf("%s: taken as %+v", bad, r)
		}
	}
	if _, ok := parse(1300, []byte(realRead)); ok {
		t.Error("a SYSCALL record taken")
	}
	// Network and unknown rights, and an overlong path.
	r, _ := parse(typeLandlockAccess, []byte(`audit(1.000:1): domain=5 blockers=net.connect_tcp daddr=93.184.216.34 dest=443`))
	if r.denial.Effect != wire.EffectConnect || r.denial.Object != "93.184.216.34:443" || r.denial.Rule != wire.RuleLandlock {
		t.Errorf("connect: %+v", r.denial)
	}
	r, _ = parse(typeLandlockAccess, []byte(`audit(1.000:1): domain=5 blockers=fs.future_right,fs.write_file path="/a"`))
	if r.denial.Effect != wire.EffectKernel || r.denial.Call != "landlock" {
		t.Errorf("unknown right: %+v", r.denial)
	}
	r, _ = parse(typeLandlockAccess, []byte(`audit(1.000:1): domain=5 blockers=fs.write_file path="/`+strings.Repeat("a", 9000)+`"`))
	if len(r.denial.Object) != maxObject {
		t.Errorf("an overlong path kept at %d bytes", len(r.denial.Object))
	}
}
