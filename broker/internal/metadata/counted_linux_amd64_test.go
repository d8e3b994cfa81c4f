package metadata

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/broker/internal/denial"
	"warrant/wire"
)

// TestEveryNotifiedCallIsKnown reads the launcher's main program and its
// hints variant, as libseccomp disassembled them, and requires the broker
// to know exactly the calls they notify: each one has a name here, and
// each is a counted refusal, connect, a metadata call or watch that
// decode takes, or (the hints program's alone) a write-intent open that
// writeOpen takes.
func TestEveryNotifiedCallIsKnown(t *testing.T) {
	text, err := os.ReadFile("../../../launcher/linux/seccomp_amd64.txt")
	if err != nil {
		t.Fatal(err)
	}
	main, hints := notifiedBy(t, string(text), "main"), notifiedBy(t, string(text), "hints")
	for nr, name := range hints {
		if got := callName(nr); got != name {
			t.Errorf("syscall %d: named %q here, %q by libseccomp", nr, got, name)
		}
		_, isOpen := writeOpen(&seccompData{Nr: nr, Arch: unix.AUDIT_ARCH_X86_64})
		if _, inMain := main[nr]; inMain == isOpen {
			t.Errorf("%s: notified by main %v, a write-intent open %v", name, inMain, isOpen)
		}
		if _, ok := refusedCalls[nr]; ok || nr == sysConnect || isOpen {
			continue
		}
		if _, errno := decode(&caller{}, &seccompData{Nr: nr, Arch: unix.AUDIT_ARCH_X86_64}); errno == unix.EPERM {
			t.Errorf("%s is notified but neither counted nor decoded", name)
		}
	}
	if len(hints) != len(main)+len(writeOpenCalls) {
		t.Errorf("hints notifies %d calls, main %d: want main's and the %d opens", len(hints), len(main), len(writeOpenCalls))
	}
	for nr, name := range syscallNames {
		if _, ok := hints[nr]; !ok {
			t.Errorf("%s is named here but the filter does not notify it", name)
		}
	}
}

// notifiedBy is the calls the disassembly of program prog notifies.
func notifiedBy(t *testing.T, text, prog string) map[int32]string {
	_, body, ok := strings.Cut(text, "\n## "+prog+":")
	if !ok {
		t.Fatalf("no %s program in seccomp_amd64.txt", prog)
	}
	body, _, _ = strings.Cut(body, "\n## ")
	block := regexp.MustCompile(`# filter for syscall "([a-z0-9_]+)" \((\d+)\)`)
	notified := map[int32]string{}
	locs := block.FindAllStringSubmatchIndex(body, -1)
	for i, l := range locs {
		end := len(body)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if strings.Contains(body[l[1]:end], "action 0x7fc00000") { // SECCOMP_RET_USER_NOTIF
			nr, _ := strconv.Atoi(body[l[4]:l[5]])
			notified[int32(nr)] = body[l[2]:l[3]]
		}
	}
	if len(notified) < 50 {
		t.Fatalf("found %d notified calls in %s; is the disassembly's format still the one parsed here?", len(notified), prog)
	}
	return notified
}

func TestCountedObjects(t *testing.T) {
	for _, c := range []struct {
		nr     int32
		args   [6]uint64
		errno  unix.Errno
		effect wire.DenialEffect
		rule   wire.DenialRule
		object string
	}{
		{unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, unix.EPERM, wire.EffectSocket, wire.RuleNoNetwork, "AF_INET SOCK_STREAM"},
		{unix.SYS_SOCKET, [6]uint64{unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP}, unix.EPERM, wire.EffectSocket, wire.RuleNoNetwork, "AF_INET6 SOCK_DGRAM IPPROTO_UDP"},
		{unix.SYS_SOCKET, [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_NONBLOCK}, unix.EPERM, wire.EffectSocket, wire.RuleHostSocket, "AF_UNIX SOCK_STREAM"},
		{unix.SYS_SOCKET, [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, unix.EPERM, wire.EffectSocket, wire.RuleInterfaceList, "AF_NETLINK SOCK_RAW NETLINK_ROUTE"},
		{unix.SYS_SOCKET, [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, unix.EPERM, wire.EffectSocket, wire.RuleNetlink, "AF_NETLINK SOCK_RAW NETLINK_AUDIT"},
		{unix.SYS_SOCKET, [6]uint64{unix.AF_PACKET, unix.SOCK_RAW, 0x300}, unix.EPERM, wire.EffectSocket, wire.RuleNoNetwork, "AF_PACKET SOCK_RAW protocol 768"},
		{unix.SYS_SOCKET, [6]uint64{99, 14}, unix.EPERM, wire.EffectSocket, wire.RuleNoNetwork, "family 99 type 14"},
		{unix.SYS_SOCKET, [6]uint64{1<<32 | unix.AF_INET, unix.SOCK_STREAM}, unix.EPERM, wire.EffectSocket, wire.RuleNoNetwork, "AF_INET SOCK_STREAM"},
		{unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_NEWNS | uint64(unix.SIGCHLD)}, unix.ENOSYS, wire.EffectNamespace, wire.RuleNoNamespace, "CLONE_NEWNS|CLONE_NEWUSER"},
		{unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_FILES}, unix.EPERM, wire.EffectNamespace, wire.RuleNoNamespace, "CLONE_NEWUSER|0x400"},
		{unix.SYS_SETNS, [6]uint64{3, 0}, unix.EPERM, wire.EffectNamespace, wire.RuleNoNamespace, "0x0"},
		{unix.SYS_PTRACE, [6]uint64{unix.PTRACE_ATTACH, 1}, unix.EPERM, wire.EffectPtrace, wire.RuleNoPtrace, "PTRACE_ATTACH"},
		{unix.SYS_PROCESS_VM_READV, [6]uint64{4242}, unix.EPERM, wire.EffectPtrace, wire.RuleNoPtrace, "pid 4242"},
		{unix.SYS_MOUNT, [6]uint64{}, unix.EPERM, wire.EffectMount, wire.RuleNoMount, ""},
		{unix.SYS_SETSID, [6]uint64{}, unix.EPERM, wire.EffectSession, wire.RuleNoSession, ""},
		{unix.SYS_IO_URING_SETUP, [6]uint64{}, unix.EPERM, wire.EffectIOUring, wire.RuleNoIOUring, ""},
		{unix.SYS_BPF, [6]uint64{}, unix.EPERM, wire.EffectKernel, wire.RuleKernelSurface, ""},
	} {
		errno, d, ok := counted(&seccompData{Nr: c.nr, Arch: unix.AUDIT_ARCH_X86_64, Args: c.args})
		family := ""
		if c.nr == unix.SYS_SOCKET {
			family, _, _ = strings.Cut(c.object, " ")
			if family == "family" {
				family = "other"
			}
		}
		if !ok || errno != c.errno || d.Effect != c.effect || d.Rule != c.rule || d.Object != c.object ||
			d.Family != family || d.Source != wire.SourceFilterCount || d.Call != callName(c.nr) {
			t.Errorf("%s%v: %v %+v %v; want %v, %s %s %q %q", callName(c.nr), c.args, errno, d, ok, c.errno, c.effect, c.rule, c.object, family)
		}
	}
	if _, _, ok := counted(&seccompData{Nr: unix.SYS_CHMOD, Arch: unix.AUDIT_ARCH_X86_64}); ok {
		t.Error("chmod was taken for a counted refusal")
	}
}

// TestClassesAreBounded: the classes the server counts refusals under
// (effect, call, socket family, rule, source) come from closed tables,
// so a target cannot make more of them than wire.MaxDenialCounts,
// whatever objects it chooses: one a counted call (a socket's per
// family, two for netlink's rules, and "other"), and for each call the
// broker answers one per rule answerRules allows its effect, per family
// (named, "other" or none) for connect's. record refuses a class outside
// these; the proxy's refusals (Record) are connect's.
func TestClassesAreBounded(t *testing.T) {
	n := len(refusedCalls) - 1 + len(families) + 2 + 2*len(writeOpenCalls) // a hint: write or create
	answered := 0
	for nr := range syscallNames {
		if _, ok := refusedCalls[nr]; ok {
			continue
		}
		if _, ok := writeOpen(&seccompData{Nr: nr, Arch: unix.AUDIT_ARCH_X86_64}); ok {
			continue
		}
		answered++
		effect, perFamily := answeredEffect(nr), 1
		if effect == wire.EffectConnect {
			perFamily = len(families) + 2
		}
		n += len(answerRules[effect]) * perFamily
	}
	t.Logf("at most %d classes", n)
	if answered != 20 || n > wire.MaxDenialCounts {
		t.Fatalf("%d classes at most (%d answered calls), past wire.MaxDenialCounts %d", n, answered, wire.MaxDenialCounts)
	}
}

// TestRecordHoldsClasses: a refusal by the broker of a class answerRules
// does not allow is an internal error, not a new class; the proxy's are
// connect's, whatever effect and call it gave.
func TestRecordHoldsClasses(t *testing.T) {
	s, err := Prepare(-1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Record(wire.Denial{Effect: wire.EffectMetadata, Call: "chmod", Object: "example.org:443", Rule: wire.RuleNotOnLease}, time.Now())
	want := wire.DenialCount{Effect: wire.EffectConnect, Call: "connect", Rule: wire.RuleNotOnLease, Source: wire.SourceBroker, Count: 1}
	if d := s.Stop().Denials; len(d.Counts) != 1 || d.Counts[0] != want || d.Validate() != nil {
		t.Fatalf("the proxy's refusal: %+v, want %+v", d, want)
	}
	for _, d := range []wire.Denial{
		{Effect: wire.EffectMetadata, Call: "chmod", Rule: wire.RuleNoPtrace, Source: wire.SourceBroker},
		{Effect: wire.EffectMetadata, Call: "chmod", Family: "AF_INET", Rule: wire.RuleOutsideScope, Source: wire.SourceBroker},
		{Effect: wire.EffectConnect, Call: "connect", Family: "AF_INET 7", Rule: wire.RuleNoNetwork, Source: wire.SourceBroker},
		{Effect: wire.EffectConnect, Call: "connect", Rule: wire.RuleLandlock, Source: wire.SourceBroker},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v was recorded", d.Class())
				}
			}()
			s.record(d, time.Now())
		}()
	}
}

// TestFloodHidesNoRefusal: 200 sockets of distinct families fill the
// records with samples; the ptrace after them is counted exactly under
// its own class, and each family past the named ones under "other".
func TestFloodHidesNoRefusal(t *testing.T) {
	l := denial.New(wire.SourceFilterCount)
	for f := range uint64(200) {
		_, d, _ := counted(&seccompData{Nr: unix.SYS_SOCKET, Arch: unix.AUDIT_ARCH_X86_64, Args: [6]uint64{f, unix.SOCK_STREAM}})
		l.Add(*d, time.Now())
	}
	_, d, _ := counted(&seccompData{Nr: unix.SYS_PTRACE, Arch: unix.AUDIT_ARCH_X86_64, Args: [6]uint64{unix.PTRACE_ATTACH, 1}})
	l.Add(*d, time.Now())
	got := l.Denials()
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	var ptrace, other, sum uint64
	for _, c := range got.Counts {
		switch {
		case c.Call == "ptrace" && c.Rule == wire.RuleNoPtrace:
			ptrace += c.Count
		case c.Family == "other":
			other += c.Count
		}
		sum += c.Count
	}
	if len(got.Records) != wire.MaxDenials || got.Total != 201 || sum != 201 || ptrace != 1 ||
		other != 200-uint64(len(families)) || len(got.Counts) > len(families)+3 {
		t.Fatalf("%d records, total %d, %d classes summing to %d: ptrace %d, other %d", len(got.Records), got.Total,
			len(got.Counts), sum, ptrace, other)
	}
}
