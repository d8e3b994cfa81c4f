package view

import (
	"fmt"
	"io"
	"strings"
	"time"

	"warrant/wire"
)

// Denial is one kind of call the sandbox refused (wire.Denial) as a
// person or an agent reads it: the rule in words (Why) and the smallest
// thing a person could do to allow it (Remedy), which the agent cannot
// do itself.
type Denial struct {
	Effect string `json:"effect"`
	Call   string `json:"call"`
	Object string `json:"object"`
	Rule   string `json:"rule"`
	Why    string `json:"why"`
	Source string `json:"source"` // broker, filter-count, kernel-audit or hint (docs/json.md)
	Count  uint64 `json:"count"`
	First  string `json:"first"`
	Remedy string `json:"remedy"`
}

// DenialsSeen says what watched an action for refusals and how many it
// saw: Total counts every refused call and every hint, Unlisted those of
// kinds past the cap of wire.MaxDenials records, and Counts every one
// exactly by class, so that a flood of refusals of distinct objects,
// which fills the records, hides no other kind of refusal.
type DenialsSeen struct {
	Sources  []string      `json:"sources"`
	Total    uint64        `json:"total"`
	Unlisted uint64        `json:"unlisted"`
	Counts   []DenialCount `json:"counts"`
}

// DenialCount is one class of refused calls (wire.DenialCount): the same
// call, of the same socket family, refused by the same rule, seen by the
// same source, whatever its object; Count is exact, Unlisted the calls of
// it that no listed kind (denials, routine_denials) accounts for.
type DenialCount struct {
	Effect   string `json:"effect"`
	Call     string `json:"call"`
	Family   string `json:"family"` // a socket call's address family (AF_INET, …, "other"); "" for other calls
	Rule     string `json:"rule"`
	Source   string `json:"source"`
	Count    uint64 `json:"count"`
	Unlisted uint64 `json:"unlisted"`
}

// unlistedLine says c's calls that no listed kind accounts for on one
// line, as a record's (Denial.line), the family standing for the object.
func (c *DenialCount) unlistedLine() string {
	effect, _ := wire.ParseEnum[wire.DenialEffect](c.Effect)
	rule, _ := wire.ParseEnum[wire.DenialRule](c.Rule)
	source, _ := wire.ParseEnum[wire.DenialSource](c.Source)
	d := denialOf(&wire.Denial{Effect: effect, Call: c.Call, Object: c.Family, Rule: rule, Source: source, Count: c.Unlisted})
	return d.line("")
}

// cannotGrant ends every remedy: an agent reads it where it acts.
const cannotGrant = " The agent cannot grant this itself."

// rules says each rule in words, and what would allow a refused call.
var rules = map[wire.DenialRule]struct{ why, remedy string }{
	wire.RuleOutsideScope: {"outside the writable scope",
		"not grantable by path in warrant: only the workspace (broker run --workspace DIR), the action's HOME and TMPDIR " +
			"and the workspace's cache are writable; a person can copy the file into the workspace and work on the copy."},
	wire.RuleNotOwner: {"not owned by the action's uid",
		"a person can give the file to the broker's uid outside the sandbox (chown); warrant changes only the action's uid's files."},
	wire.RuleSetID:          {"a setuid or setgid bit", "not possible in warrant: no action sets a setuid or setgid bit."},
	wire.RuleXattrNamespace: {"an extended attribute outside user.* and POSIX ACLs", "not possible in warrant: only user.* attributes and POSIX ACLs can be set."},
	wire.RuleForeignOwner:   {"an owner or group not the action's", "not possible in warrant: a file can be given only to the action's own uid and groups."},
	wire.RuleSpecialFile:    {"a device node or FIFO", "not possible in warrant: device nodes and FIFOs are never changed."},
	wire.RuleReadOnly: {"read-only for every action (a protected path or a read-only mount)",
		"a person can change it outside the sandbox; protected paths (git's configuration and hooks, agent and editor settings, .envrc) stay read-only in every action."},
	wire.RuleCallerUnreadable: {"the broker could not read the calling process to check the call",
		"not possible in warrant: the broker must be able to read the caller (a process that makes itself non-dumpable cannot have these calls answered)."},
	wire.RuleNoNetwork: {"no network in the sandbox",
		"an agent may ask for exact TCP destinations, reached through the broker's proxy: broker run --egress HOST:PORT -- … " +
			"(the MCP run tool's egress); a person approves the exact list. UDP, raw and other sockets stay refused; the proxy resolves names."},
	wire.RuleNotThroughProxy: {"a connection not through the broker's egress proxy",
		"connect through the proxy the environment names (HTTPS_PROXY); direct connections are refused."},
	wire.RuleNotOnLease: {"a destination the action's egress grant does not list",
		"a person approves HOST:PORT: broker approve ID --egress HOST:PORT (the whole exact list, on the request a run asking for it makes)."},
	wire.RulePrivateAddress: {"a granted name resolved to a loopback, private, link-local or metadata address",
		"grant the literal address:port itself if it is meant (a local mirror): a person approves broker approve ID --egress ADDRESS:PORT."},
	wire.RuleHostSocket:    {"no socket of the host's", "not possible in warrant: an action reaches no socket of the host's, only socketpairs among its own processes."},
	wire.RuleInterfaceList: {"no view of the host's interfaces", "not possible in warrant: actions have no network; programs that list interfaces fall back."},
	wire.RuleNetlink:       {"no kernel (netlink) sockets", "not possible in warrant: actions have no netlink sockets."},
	wire.RuleNoPtrace:      {"no tracing or reading of another process", "not possible in warrant: run the debugger or tracer outside the sandbox."},
	wire.RuleNoMount:       {"no mounts", "not possible in warrant: actions mount nothing."},
	wire.RuleNoNamespace: {"no namespaces",
		"not possible in warrant: container tools and browser sandboxes need namespaces; run them outside the sandbox."},
	wire.RuleNoIOUring: {"no io_uring", "not possible in warrant: io_uring is off; programs that ask fall back to ordinary I/O."},
	wire.RuleNoSession: {"an action's processes stay in its process group",
		"not possible in warrant: the group is how an action's end is confirmed."},
	wire.RuleKernelSurface: {"kernel surface no action is given", "not possible in warrant."},
	wire.RuleLandlock:      {"outside what Landlock grants the action", ""}, // the remedy is landlockRemedy's
	wire.RuleKernelUnsupported: {"this kernel cannot support the call in the sandbox",
		"a person can run the broker on a newer kernel: inotify watches need thread pidfds (Linux 6.9); programs that ask fall back to polling."},
}

// landlockRemedy is what would allow a refusal of Landlock's.
func landlockRemedy(d *wire.Denial) string {
	if wire.InKernelFS(d.Object) {
		return "not possible in warrant: no read path opens the host's /proc, /sys or /dev to an action (they show its other processes and devices); programs that probe them fall back."
	}
	switch d.Effect {
	case wire.EffectRead, wire.EffectExec:
		return "a person can grant reading it to every action: broker serve --read-path DIR (restart the daemon with it)."
	case wire.EffectWrite, wire.EffectCreate:
		return rules[wire.RuleOutsideScope].remedy
	case wire.EffectConnect:
		return rules[wire.RuleNoNetwork].remedy
	}
	return "not possible in warrant."
}

// Routine reports whether a refusal is one programs make to probe and
// recover from: glibc's nscd lookup opens an AF_UNIX socket at every
// user lookup (ls -l, id), getifaddrs and getaddrinfo a NETLINK_ROUTE
// one. They are listed apart, so that they do not read as the cause of
// a failure, and a successful run's text leaves them out: every
// socket(AF_UNIX) then, whatever a program wanted it for (one that tried
// a host's service and did without it ran as it was allowed to). They
// stay in the JSON (routine_denials), the counts and the receipt. So
// does Landlock's refusal of a device ioctl (isatty of /dev/null, in
// every shell), and of a read of a file runtimes probe to size
// themselves (wire.RuntimeProbe: Go's runtime reads its cgroup in each of
// a go build's processes, node its memory), seen where the kernel's
// audit records are read.
func Routine(d *wire.Denial) bool {
	return d.Rule == wire.RuleInterfaceList || d.Rule == wire.RuleHostSocket && d.Call == "socket" ||
		d.Source == wire.SourceKernelAudit && (d.Call == "fs.ioctl_dev" || d.Effect == wire.EffectRead && wire.RuntimeProbe(d.Object))
}

// denialOf is d in words.
func denialOf(d *wire.Denial) Denial {
	r := rules[d.Rule]
	remedy := r.remedy
	if d.Rule == wire.RuleLandlock {
		remedy = landlockRemedy(d)
	}
	return Denial{Effect: d.Effect.String(), Call: d.Call, Object: d.Object, Rule: d.Rule.String(), Why: r.why,
		Source: d.Source.String(), Count: d.Count, First: Time(time.Unix(0, d.FirstUnixNs)), Remedy: remedy + cannotGrant}
}

// denialsOf splits d's records into those that may explain a failure and
// the routine ones, in the order they first occurred, and says what
// watched; nil seen when nothing watched.
func denialsOf(d *wire.Denials) (listed, routine []Denial, seen *DenialsSeen) {
	listed, routine = []Denial{}, []Denial{}
	if d == nil {
		return listed, routine, nil
	}
	for i := range d.Records {
		if Routine(&d.Records[i]) {
			routine = append(routine, denialOf(&d.Records[i]))
		} else {
			listed = append(listed, denialOf(&d.Records[i]))
		}
	}
	seen = &DenialsSeen{Sources: append([]string{}, d.Sources...), Total: d.Total, Unlisted: d.Total - d.Listed(),
		Counts: []DenialCount{}}
	left := d.Unlisted()
	for i, c := range d.Counts {
		seen.Counts = append(seen.Counts, DenialCount{Effect: c.Effect.String(), Call: c.Call, Family: c.Family,
			Rule: c.Rule.String(), Source: c.Source.String(), Count: c.Count, Unlisted: left[i]})
	}
	return listed, routine, seen
}

// line says one kind of refusal on one line: how many calls, the call
// and its object, the rule, the source (and when it was first seen, when
// first is set) and the remedy.
func (d *Denial) line(first string) string {
	what := d.Call
	if d.Object != "" {
		what += " " + d.Object
	}
	if d.Call == "socket" {
		what = "socket(" + d.Object + ")"
	}
	if first != "" {
		first = "; first " + first
	}
	source := d.Source
	if source == wire.SourceHint.String() { // never a decision: say what it rests on
		source += ": the path as the target named it, Landlock's own refusal not seen"
	}
	return fmt.Sprintf("%s: %d× %s (%s; source %s%s) — %s", d.Effect, d.Count, what, d.Why, source, first,
		strings.TrimSuffix(d.Remedy, cannotGrant))
}

// hints is how many of the calls counted are hints (source hint), of
// all and of kinds past the cap: a hint is the target's path, not a
// refusal seen, and is counted apart from refusals where text says how
// many.
func hints(counts []DenialCount) (total, unlisted uint64) {
	for _, c := range counts {
		if c.Source == wire.SourceHint.String() {
			total += c.Count
			unlisted += c.Unlisted
		}
	}
	return total, unlisted
}

// andHints is " and n hint(s)", or "" for none.
func andHints(n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and %d hint(s)", n)
}

// writeDenials says the refusals, a line each after a heading: those
// that may explain a failure, the hints under their own (they are not
// refusals seen), the routine ones when the action did not succeed (they
// are noise when it did), how many calls were of kinds past the cap, and
// that the agent cannot grant any remedy itself.
func writeDenials(b *strings.Builder, listed, routine []Denial, seen *DenialsSeen, succeeded bool) {
	if seen == nil || seen.Total == 0 {
		return
	}
	said := false
	for _, hinted := range []bool{false, true} {
		heading := "\n  the sandbox refused:"
		if hinted {
			heading = "\n  writes Landlock refuses, seen only as hints (the target's path; Landlock's own refusal not seen):"
		}
		for i := range listed {
			if (listed[i].Source == wire.SourceHint.String()) != hinted {
				continue
			}
			b.WriteString(heading)
			heading, said = "", true
			b.WriteString("\n    " + listed[i].line(""))
		}
	}
	if !succeeded {
		for i := range routine {
			if i == 0 {
				b.WriteString("\n  also refused, as programs expect (they fall back):")
			}
			b.WriteString("\n    " + routine[i].line(""))
		}
		said = said || len(routine) > 0
	}
	if seen.Unlisted > 0 {
		_, h := hints(seen.Counts)
		fmt.Fprintf(b, "\n  and %d more refused call(s)%s of kinds past the first %d, by class:", seen.Unlisted-h, andHints(h), wire.MaxDenials)
		writeUnlisted(b, "\n    ", seen.Counts)
		said = true
	}
	if said {
		b.WriteString("\n  each remedy is a person's to apply: the agent cannot grant it itself")
	}
}

// writeUnlisted writes, each after prefix, a line for every class with
// calls no listed kind accounts for.
func writeUnlisted(b *strings.Builder, prefix string, counts []DenialCount) {
	for i := range counts {
		if counts[i].Unlisted > 0 {
			b.WriteString(prefix + counts[i].unlistedLine())
		}
	}
}

// WriteRefused is a receipt's record of refusals (receipt.Denials.Wire),
// for receipts show: every record, routine ones included, with its
// remedy, and by class the calls of kinds past the records.
func WriteRefused(w io.Writer, wd *wire.Denials) {
	_, _, seen := denialsOf(wd)
	h, _ := hints(seen.Counts)
	fmt.Fprintf(w, "Refused   %d call(s)%s, seen by %s", wd.Total-h, andHints(h), strings.Join(wd.Sources, ", "))
	if seen.Unlisted > 0 {
		fmt.Fprintf(w, " (%d of kinds past the first %d, not listed but counted by class)", seen.Unlisted, wire.MaxDenials)
	}
	fmt.Fprintln(w)
	for i := range wd.Records {
		v := denialOf(&wd.Records[i])
		routine := ""
		if Routine(&wd.Records[i]) {
			routine = "routine, as programs expect: "
		}
		fmt.Fprintf(w, "          %s%s\n", routine, v.line(Time(time.Unix(0, wd.Records[i].FirstUnixNs))))
	}
	if seen.Unlisted > 0 {
		var b strings.Builder
		b.WriteString("          not listed, by class:")
		writeUnlisted(&b, "\n            ", seen.Counts)
		fmt.Fprintln(w, b.String())
	}
	if len(wd.Records) > 0 {
		fmt.Fprintln(w, "          each remedy is a person's to apply: the agent cannot grant it itself")
	}
}
