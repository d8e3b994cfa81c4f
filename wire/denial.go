package wire

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"warrant/internal/closed"
)

// DenialEffect is what a refused call would have done.
type DenialEffect uint8

// The effects.
const (
	EffectRead DenialEffect = iota + 1
	EffectWrite
	EffectCreate
	EffectExec
	EffectConnect
	EffectSocket
	EffectSignal
	EffectPtrace
	EffectMount
	EffectNamespace
	EffectIOUring
	EffectMetadata // a file's mode, owner, times or extended attributes
	EffectWatch    // an inotify watch
	EffectSession  // a new session or process group
	EffectKernel   // kernel surface no action is given (bpf, perf, keys, modules, …)
)

var denialEffectNames = []string{"", "read", "write", "create", "exec", "connect", "socket", "signal",
	"ptrace", "mount", "namespace", "io_uring", "metadata", "watch", "session", "kernel"}

func (e DenialEffect) names() []string              { return denialEffectNames }
func (e DenialEffect) String() string               { return closed.String(denialEffectNames, e) }
func (e DenialEffect) MarshalText() ([]byte, error) { return closed.Marshal(denialEffectNames, e) }
func (e *DenialEffect) UnmarshalText(text []byte) error {
	return closed.Unmarshal(denialEffectNames, text, e)
}

// DenialSource is how a refusal was observed: exactly, by the broker that
// answered the call (broker) or counted the filter's refusal
// (filter-count); from the kernel's own record of it (kernel-audit); or
// from a path string the target controls (hint), which nothing decides
// on.
type DenialSource uint8

// The sources.
const (
	SourceBroker DenialSource = iota + 1
	SourceKernelAudit
	SourceFilterCount
	SourceHint
)

var denialSourceNames = []string{"", "broker", "kernel-audit", "filter-count", "hint"}

func (s DenialSource) names() []string              { return denialSourceNames }
func (s DenialSource) String() string               { return closed.String(denialSourceNames, s) }
func (s DenialSource) MarshalText() ([]byte, error) { return closed.Marshal(denialSourceNames, s) }
func (s *DenialSource) UnmarshalText(text []byte) error {
	return closed.Unmarshal(denialSourceNames, text, s)
}

// DenialRule is the rule or mechanism that refused a call.
type DenialRule uint8

// The rules. The first eight, and the last, are the broker's for the
// metadata calls and watches it answers (broker/internal/metadata); the
// rest are the launcher's seccomp filter's, and Landlock's.
const (
	RuleOutsideScope      DenialRule = iota + 1 // the object is not beneath the writable scope
	RuleNotOwner                                // the object is not owned by the action's uid
	RuleSetID                                   // a setuid or setgid bit
	RuleXattrNamespace                          // an extended attribute outside user.* and POSIX ACLs
	RuleForeignOwner                            // chown to a uid or group not the action's
	RuleSpecialFile                             // a device node, FIFO or socket file
	RuleReadOnly                                // a read-only bind (protected path) or mount
	RuleCallerUnreadable                        // the broker could not read the caller to check it
	RuleNoNetwork                               // a network socket (AF_INET, AF_INET6, AF_PACKET, …)
	RuleHostSocket                              // an AF_UNIX socket, which could reach the host's services
	RuleInterfaceList                           // NETLINK_ROUTE: the host's interfaces and routes
	RuleNetlink                                 // another kernel (netlink) socket
	RuleNoPtrace                                // tracing or another process's memory
	RuleNoMount                                 // a mount call
	RuleNoNamespace                             // a new namespace, or joining one
	RuleNoIOUring                               // io_uring
	RuleNoSession                               // leaving the action's process group
	RuleKernelSurface                           // kernel surface no action is given
	RuleLandlock                                // Landlock's file-system, network or scope rules
	RuleKernelUnsupported                       // this kernel lacks what the broker needs to answer the call
	RuleNotThroughProxy                         // a connect to anything but the broker's egress proxy
	RuleNotOnLease                              // a destination the action's egress grant does not list
	RulePrivateAddress                          // a listed name resolved to a loopback, private, link-local or metadata address
)

var denialRuleNames = []string{"", "outside-writable-scope", "not-owner", "setid-bit", "xattr-namespace",
	"foreign-owner", "special-file", "read-only", "caller-unreadable", "no-network", "host-socket",
	"interface-list", "netlink", "no-ptrace", "no-mount", "no-namespace", "no-io-uring", "no-session",
	"kernel-surface", "landlock", "kernel-unsupported", "not-through-proxy", "not-on-egress-lease",
	"private-address"}

func (r DenialRule) names() []string              { return denialRuleNames }
func (r DenialRule) String() string               { return closed.String(denialRuleNames, r) }
func (r DenialRule) MarshalText() ([]byte, error) { return closed.Marshal(denialRuleNames, r) }
func (r *DenialRule) UnmarshalText(text []byte) error {
	return closed.Unmarshal(denialRuleNames, text, r)
}

// Denial is one kind of refused call of an action: the same call on the
// same object refused by the same rule, observed the same way, Count
// times, first at FirstUnixNs (wall clock).
type Denial struct {
	Effect DenialEffect `cbor:"effect"`
	Call   string       `cbor:"call"` // the system call's name
	// Object is what the call named, as observed: a path as the broker
	// resolved it (the kernel's name for the object it opened; a runtime's
	// probe of its own /proc files as ProbePath writes it), a socket's
	// family, type and protocol, namespace flags; "" when it names none.
	// It is text in DenialObject's form.
	Object string `cbor:"object"`
	// Family is a socket call's address family by name (AF_INET, …), or
	// "other" for one not named here; "" for every other call.
	Family      string       `cbor:"family,omitempty"`
	Rule        DenialRule   `cbor:"rule"`
	Source      DenialSource `cbor:"source"`
	Count       uint64       `cbor:"count"`
	FirstUnixNs int64        `cbor:"first_unix_ns"`
}

// DenialCount is the exact count of one class of refused calls: the same
// call (of the same socket family) refused by the same rule, observed
// the same way, whatever its object. Every part of a class comes from a
// closed table, so the classes are bounded whatever the target does.
type DenialCount struct {
	Effect DenialEffect `cbor:"effect"`
	Call   string       `cbor:"call"`
	Family string       `cbor:"family,omitempty"`
	Rule   DenialRule   `cbor:"rule"`
	Source DenialSource `cbor:"source"`
	Count  uint64       `cbor:"count"`
}

// Class is the class d's calls are counted under, without a count.
func (d *Denial) Class() DenialCount {
	return DenialCount{Effect: d.Effect, Call: d.Call, Family: d.Family, Rule: d.Rule, Source: d.Source}
}

// class is c without its count.
func (c DenialCount) class() DenialCount {
	c.Count = 0
	return c
}

// Bounds of an action's record: MaxDenials kinds of object are listed as
// samples, MaxDenialCounts classes counted. A target chooses objects (a
// path, a family number), so 64 cheap kinds fill the samples; the
// classes, whose parts come from closed tables, cannot be filled that way
// (broker/internal/metadata proves its tables within MaxDenialCounts).
const (
	MaxDenials      = 64
	MaxDenialCounts = 512
)

// Denials is what an action's sandbox was seen to refuse: every refused
// call the sources observed counted exactly in Total and in its class's
// Counts (the classes in the order they first occurred), and the first
// MaxDenials kinds listed in Records, in the order they first occurred.
type Denials struct {
	// Sources names the sources that watched this action (DenialSource
	// names: a list of a one-byte enum would encode as a byte string).
	Sources []string      `cbor:"sources"`
	Total   uint64        `cbor:"total"`
	Counts  []DenialCount `cbor:"counts,omitempty"`
	Records []Denial      `cbor:"records,omitempty"`
}

// Listed is the number of calls Records account for; Total-Listed were
// of kinds past the cap.
func (d *Denials) Listed() uint64 {
	var n uint64
	for _, r := range d.Records {
		n += r.Count
	}
	return n
}

// Unlisted returns, for each class of Counts in its order, the calls of
// it that Records do not account for.
func (d *Denials) Unlisted() []uint64 {
	listed := map[DenialCount]uint64{}
	for _, r := range d.Records {
		listed[r.Class()] += r.Count
	}
	out := make([]uint64, len(d.Counts))
	for i, c := range d.Counts {
		out[i] = c.Count - min(c.Count, listed[c.class()])
	}
	return out
}

// Validate checks d's bounds and that its counts add up: each class and
// record counts at least one call, from a source that watched the
// action, in its own text; no class twice; the classes together count
// Total (no more, once MaxDenialCounts classes are full: calls of a
// class past them are in Total alone); each record's calls are within
// its class's.
func (d *Denials) Validate() error {
	if err := firstErr(checkLen("denials.sources", len(d.Sources), len(denialSourceNames)-1),
		checkLen("denials.counts", len(d.Counts), MaxDenialCounts),
		checkLen("denials.records", len(d.Records), MaxDenials)); err != nil {
		return err
	}
	for _, s := range d.Sources {
		if _, err := ParseEnum[DenialSource](s); err != nil {
			return fmt.Errorf("denials.sources: %w", err)
		}
	}
	classes := map[DenialCount]uint64{}
	var sum uint64
	for i, c := range d.Counts {
		if err := d.checkClass(c); err != nil {
			return fmt.Errorf("denials.counts[%d]: %w", i, err)
		}
		if _, twice := classes[c.class()]; twice {
			return fmt.Errorf("denials.counts[%d]: the class %s %s %s is counted twice", i, c.Call, c.Rule, c.Source)
		}
		classes[c.class()] = c.Count
		if sum += c.Count; sum < c.Count {
			return fmt.Errorf("denials: the counts overflow")
		}
	}
	if sum > d.Total || sum < d.Total && len(d.Counts) < MaxDenialCounts {
		return fmt.Errorf("denials: the classes count %d calls, not the total %d", sum, d.Total)
	}
	for i, r := range d.Records {
		k := r.Class()
		err := firstErr(d.checkClass(DenialCount{k.Effect, k.Call, k.Family, k.Rule, k.Source, r.Count}),
			checkText("denials.records.object", r.Object, maxPath), checkObject("denials.records.object", r.Object))
		switch {
		case err != nil:
			return fmt.Errorf("denials.records[%d]: %w", i, err)
		case classes[k] < r.Count:
			return fmt.Errorf("denials.records[%d]: %d calls, more than its class counts", i, r.Count)
		}
		classes[k] -= r.Count
	}
	return nil
}

// checkClass checks one class's (or record's) parts and count.
func (d *Denials) checkClass(c DenialCount) error {
	err := firstErr(checkEnum(c.Effect), checkEnum(c.Rule), checkEnum(c.Source),
		checkName("call", c.Call), checkText("family", c.Family, maxName), checkObject("family", c.Family))
	switch {
	case err != nil:
		return err
	case c.Count == 0:
		return fmt.Errorf("a count of 0")
	case !slices.Contains(d.Sources, c.Source.String()):
		return fmt.Errorf("source %s did not watch the action", c.Source)
	}
	return nil
}

// MaxDenialObject bounds an object's text in a record, before its "…".
const MaxDenialObject = 1024

// escaped reports whether DenialObject writes r as bytes: control
// characters (C0, DEL, C1), invisible format characters (bidi overrides
// and isolates, zero-width spaces and joiners, …) and the line and
// paragraph separators, which would move or hide text on a terminal.
func escaped(r rune) bool {
	return r < 0x20 || r >= 0x7f && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// The files language runtimes read at start to size themselves, and do
// without when refused (RuntimeProbe): a process's own (procOwn) and a
// thread's (taskOwn) under /proc, a few of /proc's, the trees of the
// kernel's tunables, huge page settings and CPUs, and a cgroup's limits
// (cgroupLimits, by name, anywhere under /sys/fs/cgroup).
var (
	procOwn      = []string{"cgroup", "limits", "maps", "mountinfo", "stat", "statm", "status"}
	taskOwn      = []string{"stat", "status"}
	probeFiles   = []string{"/proc/cpuinfo", "/proc/meminfo", "/proc/stat"}
	probeTrees   = []string{"/proc/sys/", "/sys/devices/system/cpu/", "/sys/kernel/mm/transparent_hugepage/"}
	cgroupLimits = []string{"cgroup.controllers", "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.max", "cpu.shares", "cpu.weight",
		"memory.high", "memory.limit_in_bytes", "memory.max", "memory.soft_limit_in_bytes"}
)

// ProbePath is a path the kernel named as a record holds it: a process's
// file of procOwn, /proc/N/F, is written /proc/PID/F, and a thread's of
// taskOwn /proc/PID/task/TID/F, since every process of an action reads
// its own (the kernel resolves /proc/self) and one kind per pid would
// fill the record's kinds. Landlock's record names no process, so such a
// file of another process is written so too (a refused read of
// /proc/1/status is /proc/PID/status); every other path keeps its
// numbers: another process's environ or cmdline is named with its pid.
func ProbePath(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/proc/"), "/")
	switch {
	case !strings.HasPrefix(path, "/proc/") || !numeric(parts[0]):
	case len(parts) == 2 && slices.Contains(procOwn, parts[1]):
		return "/proc/PID/" + parts[1]
	case len(parts) == 4 && parts[1] == "task" && numeric(parts[2]) && slices.Contains(taskOwn, parts[3]):
		return "/proc/PID/task/TID/" + parts[3]
	}
	return path
}

// RuntimeProbe reports whether object, as a record holds it, is a file
// runtimes probe: ProbePath's /proc/PID forms, probeFiles, a file under
// probeTrees, or a cgroup's limit.
func RuntimeProbe(object string) bool {
	if rest, own := strings.CutPrefix(object, "/proc/PID/"); own {
		if file, thread := strings.CutPrefix(rest, "task/TID/"); thread {
			return slices.Contains(taskOwn, file)
		}
		return slices.Contains(procOwn, rest)
	}
	if rest, ok := strings.CutPrefix(object, "/sys/fs/cgroup/"); ok {
		return slices.Contains(cgroupLimits, rest[strings.LastIndexByte(rest, '/')+1:])
	}
	return slices.Contains(probeFiles, object) || slices.ContainsFunc(probeTrees, func(t string) bool { return strings.HasPrefix(object, t) })
}

func numeric(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// DenialObject is an object as a record holds it: a path the target
// chose may hold any bytes but NUL, and the record is JSON, CBOR text and
// a line on a person's terminal. Bytes that are not valid UTF-8 and the
// characters escaped reports are written \xNN, byte by byte, a backslash
// \\; past MaxDenialObject bytes it is cut before the character or
// escape that went past and ends with "…".
func DenialObject(s string) string {
	if len(s) <= MaxDenialObject && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f || r == '\\' }) {
		return s // printable ASCII: as it is
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		whole := b.Len()
		switch {
		case r == utf8.RuneError && n == 1, escaped(r):
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, "\\x%02x", c)
			}
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
		if b.Len() > MaxDenialObject { // cut before the character or escape that went past
			return b.String()[:whole] + "…"
		}
	}
	return b.String()
}

// checkObject refuses text that holds a character DenialObject escapes:
// a record from elsewhere (a receipt signed by another broker) must not
// carry raw terminal controls to the person who reads it.
func checkObject(field, s string) error {
	if i := strings.IndexFunc(s, escaped); i >= 0 {
		return fmt.Errorf("%s: an unescaped control or format character at byte %d", field, i)
	}
	return nil
}

// KernelFS are the kernel's filesystems: no workspace may be or lie
// inside one (admission.Authority), no read path may open one
// (policy.CheckReadPaths), and no remedy can grant one (view).
var KernelFS = []string{"/proc", "/sys", "/dev"}

// InKernelFS reports whether p is or lies inside one of KernelFS.
func InKernelFS(p string) bool {
	return slices.ContainsFunc(KernelFS, func(dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") })
}
