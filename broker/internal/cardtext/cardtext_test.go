package cardtext

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"warrant/broker/internal/protect"
	"warrant/broker/lifecycle"
	"warrant/wire"
)

// TestCardNamesWhatIsPreventedAndDetected: the card says which changes the
// sandbox prevents and which it only detects, names every protected path
// protect watches, and how many files the alias scan checked.
func TestCardNamesWhatIsPreventedAndDetected(t *testing.T) {
	if !slices.Equal(protectedNames[:len(protect.Paths)], protect.Paths) {
		t.Fatalf("the card names %v, protect watches %v", protectedNames, protect.Paths)
	}
	id := &wire.CommandIdentity{Workspace: wire.DirIdentity{Path: "/ws"}, Profile: wire.ProfileShort,
		Policy: wire.Policy{ReadExec: []string{"/usr"}, Devices: []string{"/dev/null"}}}
	for by, says := range map[string]string{wire.ProtectedByMount: "Read-only (binds in the action's own mount namespace)",
		wire.ProtectedByDetect: "Detected, not prevented (no user namespaces):"} {
		card := Limitations(id, 1234, "", Protection(by, "no user namespaces"), "Memory and the number of processes are NOT limited on this host.")
		for _, want := range []string{"Prevented: changing the mode, owner", says, ".git/hooks/", ".envrc", "Not hidden: whether a path outside exists",
			"(1234 files)", "No network", "\nMemory and the number of processes are NOT limited on this host."} {
			if !strings.Contains(card, want) {
				t.Errorf("the card lacks %q:\n%s", want, card)
			}
		}
	}
}

// TestBriefKeepsInStepWithLimitations: Brief knows every kind of line
// Limitations writes, with every resources sentence the host can give
// (lifecycle.Enforcement.Sentence) and both protections: no line is
// left whole, each row says what its line says in a few words, a
// weakening keeps its words and the long why (an error chain, how to
// get the limits) appears only with detail.
func TestBriefKeepsInStepWithLimitations(t *testing.T) {
	const chain = "No cgroup is writable by this broker (create cgroup /sys/fs/cgroup/warrant/s1: permission denied). To get the limits, " +
		"give it a cgroup v2 subtree with the memory and pids controllers delegated: " + lifecycle.Delegate + "."
	const cache = "/state/caches/0123/data"
	split := wire.Policy{ReadExec: []string{"/usr", "/opt/jdk"}, ReadWrite: []string{cache}, Devices: []string{"/dev/null"},
		ReadEntries: []string{"/etc/passwd"}, Excluded: []string{"/etc/shadow", "/etc/ssl/private"}}
	whole := wire.Policy{ReadExec: []string{"/usr"}, ReadWrite: []string{"/srv/extra"}, Devices: []string{"/dev/null"}, Excluded: []string{"/etc"}}
	env := []wire.EnvVar{{Name: "GOCACHE", Value: cache + "/go-build"}, {Name: "GOMODCACHE", Value: cache + "/mod"}, {Name: "LANG", Value: "C"}}
	resources := []struct {
		enf  lifecycle.Enforcement
		says string
	}{
		{lifecycle.Enforcement{Memory: lifecycle.CgroupV1, Pids: lifecycle.CgroupV1, Swap: true}, "10s wall, 10 s CPU, 2 GiB memory, 256 processes (cgroup v1)"},
		{lifecycle.Enforcement{Memory: lifecycle.CgroupV2, Pids: lifecycle.CgroupV1},
			"10s wall, 10 s CPU, 2 GiB memory (swap NOT bounded) by cgroup v2, 256 processes by cgroup v1"},
		{lifecycle.Enforcement{Memory: lifecycle.CgroupV2, Swap: true, Missing: chain},
			"10s wall, 10 s CPU, 2 GiB memory (cgroup v2); process count is NOT limited here: no writable pids cgroup controller"},
		{lifecycle.Enforcement{Pids: lifecycle.CgroupV2, Missing: chain},
			"10s wall, 10 s CPU, 256 processes (cgroup v2); memory is NOT limited here: no writable memory cgroup controller"},
		{lifecycle.Enforcement{Missing: chain},
			"10s wall, 10 s CPU; memory and process count are NOT limited here: no writable memory or pids cgroup controller"},
	}
	for _, res := range resources {
		for _, by := range []string{wire.ProtectedByMount, wire.ProtectedByDetect} {
			for _, pol := range []wire.Policy{split, whole} {
				id := &wire.CommandIdentity{Workspace: wire.DirIdentity{Path: "/ws"}, Profile: wire.ProfileShort, Policy: pol, Env: env,
					Toolchain: &wire.Toolchain{Kind: wire.ToolchainJDK, Name: "21", Root: "/opt/jdk"}}
				withCache := ""
				if pol.ReadWrite[0] == cache {
					withCache = cache
				}
				text := Limitations(id, 17, withCache, Protection(by, "no user namespaces: clone: operation not permitted"),
					res.enf.Sentence(wire.ProfileShort, 2<<30, 256))
				rows, gotCache := Brief(id, text, false)
				got := map[string]string{}
				for _, r := range rows {
					if r.Label == LabelLimitation || r.Label == LabelWhy {
						t.Errorf("Brief left a line whole (%s): %q\nof:\n%s", r.Label, r.Text, text)
					}
					got[r.Label] = r.Text
				}
				want := map[string]string{"runs as": fmt.Sprintf("uid %d, your permissions on all it can reach; no network", os.Getuid()),
					"limits": res.says, "may read": "/usr, the toolchain, /etc without its 2 secret(s)",
					"may write": "the workspace, a private HOME and TMPDIR, the workspace's cache",
					"cache":     "kept for the workspace's next actions; 2 variables point into it",
					"protected": "read-only, new ones detected: hooks, .envrc, git/IDE/agent config"}
				if by == wire.ProtectedByDetect {
					want["protected"] = "NOT read-only: hooks, .envrc, git/IDE/agent config"
				}
				if withCache == "" {
					want["may read"], want["may write"] = "/usr; not /etc: it holds secrets", "the workspace, a private HOME and TMPDIR, /srv/extra"
					delete(want, "cache")
				}
				if !maps.Equal(got, want) || gotCache != withCache {
					t.Errorf("Brief of\n%s\nis %q (cache %q), want %q", text, got, gotCache, want)
				}
				detailed, _ := Brief(id, text, true)
				if all := fmt.Sprint(detailed); (res.enf.Missing != "") != strings.Contains(all, lifecycle.Delegate) ||
					(by == wire.ProtectedByDetect) != strings.Contains(all, "operation not permitted") {
					t.Errorf("with detail, Brief is %q", detailed)
				}
			}
		}
	}
}

// TestBriefShowsWhatItDoesNotKnow: a line Brief would not write word for
// word (one of another kind, a known kind that says more, a resources
// sentence of another form) is shown whole, after the rows.
func TestBriefShowsWhatItDoesNotKnow(t *testing.T) {
	id := &wire.CommandIdentity{Workspace: wire.DirIdentity{Path: "/ws"}, Profile: wire.ProfileShort,
		Policy: wire.Policy{ReadExec: []string{"/usr"}, Devices: []string{"/dev/null"}}}
	enforced := lifecycle.Enforcement{Memory: lifecycle.CgroupV2, Pids: lifecycle.CgroupV2, Swap: true}.Sentence(wire.ProfileShort, 2<<30, 256)
	for _, c := range []struct{ resources, old, new string }{
		{enforced, "", ""},
		{"Memory is limited by a new mechanism.", "", ""},
		{enforced, "Devices: /dev/null.", "Devices: /dev/null, /dev/kvm."},
		{enforced, "(profile short).", "(profile short).Swap is NOT bounded."},
		{enforced + "\nSomething new: it can reach the moon.", "", ""},
	} {
		text := Limitations(id, 1, "", Protection(wire.ProtectedByMount, ""), c.resources)
		if c.old != "" {
			text = strings.Replace(text, c.old, c.new, 1)
		}
		rows, _ := Brief(id, text, false)
		var whole []string
		for _, r := range rows {
			if r.Label == LabelLimitation {
				whole = append(whole, r.Text)
			}
		}
		var want []string
		for line := range strings.SplitSeq(text, "\n") {
			if (c.new != "" && strings.Contains(line, c.new)) || strings.Contains(line, "new") {
				want = append(want, line)
			}
		}
		if !slices.Equal(whole, want) || rows[len(rows)-1].Label != LabelLimitation && want != nil {
			t.Errorf("Brief of\n%s\nis %q, want %q shown whole, last", text, rows, want)
		}
	}
}

// TestCardSaysWhatOfEtcIsWithheld: the card names /etc among what can be
// read, every withheld path relative to it (up to a bound, then how many
// more), and that this was decided when the policy was made.
func TestCardSaysWhatOfEtcIsWithheld(t *testing.T) {
	id := &wire.CommandIdentity{Workspace: wire.DirIdentity{Path: "/ws"}, Profile: wire.ProfileShort,
		Policy: wire.Policy{ReadExec: []string{"/usr"}, ReadEntries: []string{"/etc/passwd", "/etc/ssl/certs"},
			Excluded: []string{"/etc/shadow", "/etc/ssl/private"}, Devices: []string{"/dev/null"}}}
	card := Limitations(id, 0, "", "", "")
	for _, want := range []string{"Can read and execute: /usr, /etc but what it withholds (below).", ": shadow, ssl/private.",
		"when it made the policy (at its start)", "(2 grants;", "an entry added or replaced since is not"} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q:\n%s", want, card)
		}
	}
	for i := range 300 {
		id.Policy.Excluded = append(id.Policy.Excluded, fmt.Sprintf("/etc/x%03d", i))
	}
	if card = Limitations(id, 0, "", "", ""); !strings.Contains(card, "more (--full lists them)") || len(card) >= maxLimitations {
		t.Errorf("302 withheld paths: %d bytes\n%s", len(card), card)
	}
	id.Policy.ReadEntries, id.Policy.Excluded = nil, []string{"/etc"}
	if card = Limitations(id, 0, "", "", ""); !strings.Contains(card, "Can read and execute: /usr.\nWithheld whole: /etc,") {
		t.Errorf("/etc withheld whole:\n%s", card)
	}
}
