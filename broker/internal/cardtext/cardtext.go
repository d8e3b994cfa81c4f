package cardtext

import (
	"cmp"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"warrant/internal/profile"
	"warrant/wire"
)

// maxLimitations keeps the text within the wire's cap on human sentences.
const maxLimitations = 4096

// maxEtcWords bounds the names of what /etc withholds on the card.
const maxEtcWords = 700

// protectedNames are the workspace paths broker/internal/protect watches,
// as the card names them (its list, kept equal by a test).
var protectedNames = []string{".gitmodules", ".gitconfig", ".husky/", ".githooks/", ".claude/", ".mcp.json", ".codex/", ".cursor/", ".agents/",
	".envrc", ".vscode/", ".idea/", ".devcontainer/",
	"and for every repository in the workspace (nested, bare, submodule, worktree) .git/hooks/, config, info/, its redirections " +
		"(a .git file or symlink, commondir, gitdir, config.worktree) and core.hooksPath, wherever git resolves them"}

// The sentences of the limitations text, one a line. Brief knows a line
// by writing it again, from the identity and the one number, path or
// reason the line carries, and comparing.
const (
	runsAsFormat = "Runs as your user (uid %d) with your permissions on everything the sandbox leaves reachable; " +
		"the boundary is the sandbox, not the cwd: the whole workspace is writable."
	notHidden  = "Not hidden: whether a path outside exists, and its owner, mode, size and times (stat); Landlock has no hook for it."
	cacheStart = "Persistent cache: "
	cacheIs    = " is this workspace's cache, "
	prevented  = "Prevented: changing the mode, owner, extended attributes or times of anything outside those " +
		"(the broker answers those calls itself), and setting or creating setuid or setgid files anywhere."
	detectStart = "Detected, not prevented ("
	aliasFormat = "The workspace was checked for hard links to files outside it (%d files); " +
		"a process outside the sandbox could still plant one during the run."
)

// Protection is the card's sentence on the protected paths: by is
// wire.ProtectedByMount or wire.ProtectedByDetect, why says why no mount
// namespace can be had (detect only).
func Protection(by, why string) string {
	names := strings.Join(protectedNames, ", ")
	if by == wire.ProtectedByMount {
		return "Read-only (binds in the action's own mount namespace): what git, direnv, editors and coding agents run or obey later (" +
			names + "); creating one that does not exist yet is detected, not prevented, and listed in the receipt."
	}
	return detectStart + why + "): changes to what git, direnv, editors and coding agents run or obey later (" +
		names + "); they are listed in the receipt."
}

// Limitations is the plain text an approval request carries beside the
// identity, a sentence a line: who the action runs as, where its
// boundary really is, what it can read and write (and what of /etc is
// withheld: etcWords), the workspace's persistent cache (cache, one of
// the read-write paths; "" for none) and that it is shared, how many
// files the workspace's alias scan checked (aliasChecked) and what that
// scan cannot promise, its network (none, or only its egress grant's
// through the broker's proxy), its profile's limits, and
// the host's sentences: protection, how the protected paths are guarded
// (Protection), and resources, on its memory and process-count limits
// (what enforces each on this host, or that it is not limited, why and
// how to get it; broker/lifecycle's Enforcement.Sentence).
func Limitations(id *wire.CommandIdentity, aliasChecked int, cache, protection, resources string) string {
	read, withheld := canRead(id)
	if cache != "" {
		cache = persistentCache(id, cache)
	}
	var b strings.Builder
	for _, line := range []string{fmt.Sprintf(runsAsFormat, os.Getuid()), read, withheld, canWrite(id), notHidden, cache, prevented,
		protection, fmt.Sprintf(aliasFormat, aliasChecked), network(id), limits(id.Profile)} {
		if line != "" {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString(resources)
	if b.Len() > maxLimitations {
		return strings.ToValidUTF8(b.String()[:maxLimitations-len(" …")], "") + " …"
	}
	return b.String()
}

// canRead is the sentence on what the action can read and execute and
// etcWords's on what of /etc is withheld ("" when nothing is).
func canRead(id *wire.CommandIdentity) (read, withheld string) {
	paths := id.Policy.ReadExec
	etc, withheld := etcWords(&id.Policy, maxEtcWords)
	if len(id.Policy.ReadEntries) > 0 {
		paths = append(slices.Clone(paths), etc+" but what it withholds (below)")
	}
	return "Can read and execute: " + strings.Join(paths, ", ") + ".", withheld
}

func canWrite(id *wire.CommandIdentity) string {
	rw := append([]string{"the workspace " + id.Workspace.Path, "a private HOME and TMPDIR for this action"}, id.Policy.ReadWrite...)
	return "Can read and write: " + strings.Join(rw, ", ") + "."
}

func persistentCache(id *wire.CommandIdentity, cache string) string {
	return cacheStart + cache + cacheIs + "kept after the action and shared by every action of this workspace (and no other); " +
		cmp.Or(strings.Join(cacheVars(id, cache), ", "), "no variables") + " point into it, so what one action leaves there, another builds from."
}

// network is the sentence on the action's network: none, or only its
// egress grant's entries (which the card lists from the identity, so
// that no cut of this text can hide one).
func network(id *wire.CommandIdentity) string {
	devices := " Devices: " + strings.Join(id.Policy.Devices, ", ") + "."
	if len(id.Egress) == 0 {
		return "No network: it cannot open sockets of any family or reach other local processes." + devices
	}
	return fmt.Sprintf("Network: only TCP connections to the %d host:port entries of its egress grant, ", len(id.Egress)) + EgressLimit +
		"; no other socket, address or local process." + devices
}

// EgressLimit is what an egress grant cannot promise, in one line.
const EgressLimit = "through the broker's proxy, which sees destinations, not contents: an allowed host can receive whatever the program sends it"

// EgressEntry is one entry of an egress grant for a person: a literal
// local address (wire.EgressLocal) is marked so, since reaching the
// host's own services is another thing than reaching the internet.
func EgressEntry(entry string) string {
	if wire.EgressLocal(entry) {
		return entry + " (a local address)"
	}
	return entry
}

// EgressList is an egress grant's entries for a person, in one line.
func EgressList(entries []string) string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = EgressEntry(e)
	}
	return strings.Join(out, ", ")
}

func limits(p wire.Profile) string {
	return fmt.Sprintf("Limits (profile %s): %s.", p, ProfileLimits(p))
}

// ProfileLimits describes a profile's bundle in one line: the limits the
// broker and the launcher apply on every host. Memory and the number of
// processes depend on the host's cgroups and have a sentence of their
// own in Limitations.
func ProfileLimits(p wire.Profile) string {
	l := profile.Of(p)
	return fmt.Sprintf("wall time %s, CPU %d s, file size %s, %d open files, output kept %s head and tail per stream, "+
		"group ended past %s of output",
		l.Wall, l.CPUSeconds, size(int64(l.FileSize)), profile.OpenFiles, size(l.Retain), size(l.HardOutput))
}

func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// A Line is one row of the short approval card: its label and its text.
type Line struct{ Label, Text string }

// The labels Brief gives: a line it does not know is shown whole as a
// limitation; why is the long account a short row leaves out.
const (
	LabelLimitation = "limitation"
	LabelWhy        = "why"
)

// resourcesRe is the first sentence of lifecycle.Enforcement.Sentence:
// the memory limit and what enforces it (1-3), the process-count limit
// and what enforces it (4-5 or 6-7), and which limit is NOT limited (8),
// or all of it NOT limited (9). Compiled on first use, by Brief: not at
// every start of the thin client.
var resourcesRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(resourcesPattern)
})

const resourcesPattern = `^(?:(?:Memory (\d+ [KMG]iB) \((with swap|swap NOT bounded)\) by (cgroup v[12])` +
	`(?:, at most (\d+) processes and threads by (cgroup v[12]))?|At most (\d+) processes and threads by (cgroup v[12])) ` +
	`\(profile \w+\)(?:; (the number of processes is|memory is) NOT limited on this host)?|` +
	`(Memory and the number of processes are) NOT limited on this host)\.$`

// Brief is the limitations text Limitations wrote for identity id,
// condensed for the short approval card: who the action runs as and that
// it has no network (an egress grant is the card's, from the identity:
// EgressList, EgressLimit), what it may read and write, the workspace's cache,
// the protected paths, its limits, each a row of a few words (the
// identity gives the paths, the text the host's facts: the uid, how the
// protected paths are guarded, what enforces memory and process count).
// What every action shares (stat is not hidden, metadata calls are
// answered, what the hard-link check cannot promise) is left to the
// full text, but a weakening keeps its words: /etc withheld whole,
// protected paths NOT read-only (or read-only but new ones only
// detected), swap NOT bounded, and "memory and process count are NOT
// limited here" with a short why. The long account (the host's error
// chain, how to get the limits) is a why row only with detail. Brief
// knows a line only when it would write it word for word (resources: in
// one of Enforcement.Sentence's forms); any other line (another
// version's, one cut at maxLimitations) is shown whole. A row holds the
// identity's paths and the text's words as they are: quoting them for a
// terminal is the card's. cache is the workspace cache's path the text
// names, "" for none: the card leaves the variables that point into it
// to the cache row.
func Brief(id *wire.CommandIdentity, limitations string, detail bool) (lines []Line, cache string) {
	rows := map[string]string{}
	add := func(label, sep, text string) {
		if rows[label] != "" && text != "" {
			rows[label] += sep
		}
		rows[label] += text
	}
	read, withheld := canRead(id)
	detected := strings.TrimPrefix(Protection(wire.ProtectedByDetect, ""), detectStart) // what follows the reason
	var why string
	var unknown []Line
	for line := range strings.SplitSeq(strings.TrimRight(limitations, "\n"), "\n") {
		var uid, files int
		fmt.Sscanf(line, runsAsFormat, &uid)
		fmt.Sscanf(line, aliasFormat, &files)
		path, _, _ := strings.Cut(strings.TrimPrefix(line, cacheStart), cacheIs)
		reason := strings.TrimSuffix(strings.TrimPrefix(line, detectStart), detected)
		state, rest, _ := strings.Cut(line, ". ") // the resources sentence's first, then why
		switch m := resourcesRe().FindStringSubmatch(strings.TrimSuffix(state, ".") + "."); {
		case line == fmt.Sprintf(runsAsFormat, uid):
			add("runs as", "; ", fmt.Sprintf("uid %d, your permissions on all it can reach", uid))
		case line == network(id) && len(id.Egress) == 0:
			add("runs as", "; ", "no network")
		case line == network(id):
			// the card's network rows list the grant, from the identity
		case line == read:
			add("may read", "", briefRead(id))
		case line == withheld && withheld != "" && len(id.Policy.ReadEntries) == 0: // none of /etc
			dir, _ := etcWords(&id.Policy, 0)
			add("may read", "; ", "not "+dir+": it holds secrets")
		case line == canWrite(id):
			add("may write", "", "the workspace, a private HOME and TMPDIR")
		case line == persistentCache(id, path):
			cache = path
			add("cache", "", "kept for the workspace's next actions; "+pointing(cacheVars(id, cache)))
		case line == Protection(wire.ProtectedByMount, ""):
			add("protected", "", "read-only, new ones detected: "+protectedShort) // a name not there yet cannot be bound
		case line == Protection(wire.ProtectedByDetect, reason):
			if reason = " (" + reason + ")"; !detail {
				reason = "" // no mount namespace: the receipt lists what changed
			}
			add("protected", "", "NOT read-only"+reason+": "+protectedShort)
		case line == withheld, line == notHidden, line == prevented, line == fmt.Sprintf(aliasFormat, files):
			// the read row counts the secrets; the rest every action shares
		case line == limits(id.Profile):
			l := profile.Of(id.Profile)
			add("limits", ", ", fmt.Sprintf("%s wall, %d s CPU", l.Wall, l.CPUSeconds))
		case m != nil:
			set, not := briefResources(m)
			add("limits", ", ", set)
			add("limits", "; ", not)
			why = rest
		default:
			unknown = append(unknown, Line{LabelLimitation, line})
		}
	}
	if rows["may write"] != "" {
		for _, p := range id.Policy.ReadWrite {
			if p == cache {
				p = "the workspace's cache"
			}
			add("may write", ", ", p)
		}
	}
	for _, label := range []string{"runs as", "may read", "may write", "cache", "protected", "limits"} {
		if rows[label] != "" {
			lines = append(lines, Line{label, rows[label]})
		}
	}
	if detail && why != "" {
		lines = append(lines, Line{LabelWhy, why})
	}
	return append(lines, unknown...), cache
}

// protectedShort names the protected paths in a few words
// (protectedNames lists them): hooks (git's, .husky/, .githooks/),
// .envrc, git's, the IDEs' and the agents' configurations.
const protectedShort = "hooks, .envrc, git/IDE/agent config"

// briefRead is what the action may read and execute: the runtime paths
// (the toolchain's root named so: the card shows it) and, when /etc is
// granted entry by entry, how many secrets it keeps.
func briefRead(id *wire.CommandIdentity) string {
	pol := &id.Policy
	paths := slices.Clone(pol.ReadExec)
	if tc := id.Toolchain; tc != nil {
		if i := slices.Index(paths, tc.Root); i >= 0 {
			paths[i] = "the toolchain"
		}
	}
	read := strings.Join(paths, ", ")
	if len(pol.ReadEntries) > 0 {
		dir, _ := etcWords(pol, 0)
		read += fmt.Sprintf(", %s without its %d secret(s)", dir, len(pol.Excluded))
	}
	return read
}

// pointing says which variables point into the cache.
func pointing(names []string) string {
	switch len(names) {
	case 0:
		return "no variable points into it"
	case 1:
		return names[0] + " points into it"
	}
	return fmt.Sprintf("%d variables point into it", len(names))
}

// briefResources condenses the first sentence of the resources line, m
// as resourcesRe matched it: what enforces each limit (set) and which is
// NOT limited (not). A limit not enforced is always for want of a
// controller this broker can write (lifecycle.Unenforced).
func briefResources(m []string) (set, not string) {
	memory, swap, memBy, pids, pidsBy := m[1], m[2], m[3], cmp.Or(m[4], m[6]), cmp.Or(m[5], m[7])
	switch {
	case memory != "":
		set = memory + " memory"
		if swap != "with swap" {
			set += " (" + swap + ")"
		}
		switch {
		case pids == "":
			set += " (" + memBy + ")"
		case pidsBy != memBy:
			set += " by " + memBy + ", " + pids + " processes by " + pidsBy
		default:
			set += ", " + pids + " processes (" + memBy + ")"
		}
	case pids != "":
		set = pids + " processes (" + pidsBy + ")"
	}
	switch {
	case m[9] != "":
		not = "memory and process count are NOT limited here: no writable memory or pids cgroup controller"
	case m[8] == "memory is":
		not = "memory is NOT limited here: no writable memory cgroup controller"
	case m[8] != "":
		not = "process count is NOT limited here: no writable pids cgroup controller"
	}
	return set, not
}

// cacheVars names the identity's variables that point into cache.
func cacheVars(id *wire.CommandIdentity, cache string) []string {
	var names []string
	for _, kv := range id.Env {
		if strings.HasPrefix(kv.Value, cache+"/") {
			names = append(names, kv.Name)
		}
	}
	return names
}

// etcWords is the /etc part of pol in words, "" when /etc is granted
// whole or absent: the directory (dir, /private/etc on macOS) and what of
// it is withheld, relative to it, with at most about max bytes of names
// before "and N more".
func etcWords(pol *wire.Policy, max int) (dir, words string) {
	if len(pol.Excluded) == 0 {
		return "", ""
	}
	dir = pol.Excluded[0]
	if len(pol.ReadEntries) == 0 && len(pol.Excluded) == 1 {
		return dir, fmt.Sprintf("Withheld whole: %s, decided when the broker made the policy (at its start): it holds secrets, "+
			"and the walk found nothing else in it to grant within its bounds.", dir)
	}
	for _, p := range slices.Concat(pol.ReadEntries, pol.Excluded) {
		for dir != "/" && !strings.HasPrefix(p, dir+"/") {
			dir = path.Dir(dir)
		}
	}
	var names []string
	n := 0
	for i, p := range pol.Excluded {
		if n > max {
			names = append(names, fmt.Sprintf("and %d more (--full lists them)", len(pol.Excluded)-i))
			break
		}
		names = append(names, strings.TrimPrefix(p, strings.TrimSuffix(dir, "/")+"/"))
		n += len(names[len(names)-1]) + 2
	}
	return dir, fmt.Sprintf("Of %[1]s, the broker withheld when it made the policy (at its start) what is secret by its name or not readable by others: %[2]s. "+
		"The rest of %[1]s as it was then is readable by name (%[3]d grants; a symlink where it leads to something readable; "+
		"%[1]s itself and a directory holding a secret cannot be listed); "+
		"an entry added or replaced since is not, except inside a directory granted whole, where a secret added since is readable until the broker restarts.",
		dir, strings.Join(names, ", "), len(pol.ReadEntries))
}
