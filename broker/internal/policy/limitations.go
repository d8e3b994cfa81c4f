package policy

import (
	"fmt"
	"os"
	"strings"

	"warrant/internal/profile"
	"warrant/wire"
)

// maxLimitations keeps the text within the wire's cap on human sentences.
const maxLimitations = 4096

// protectedNames are the workspace paths broker/internal/protect watches,
// as the card names them (its list, kept equal by a test).
var protectedNames = []string{".git/hooks/", ".git/config", ".gitmodules", ".envrc", ".vscode/", ".idea/", ".devcontainer/",
	".husky/", ".githooks/", "submodule gitdirs' hooks and config", "a linked worktree's gitdir"}

// Limitations is the plain text an approval request carries beside the
// identity: who the action runs as, where its boundary really is, what it
// can read and write, the workspace's persistent cache (cache, one of the
// read-write paths; "" for none) and that it is shared, how many files
// the workspace's alias scan checked (aliasChecked) and what that scan
// cannot promise, that it has no network, its profile's limits, and
// resources: the host's sentence on its memory and process-count limits
// (what enforces each on this host, or that it is not limited, why and
// how to get it; broker/lifecycle's Enforcement.Sentence).
func Limitations(id *wire.CommandIdentity, aliasChecked int, cache, resources string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Runs as your user (uid %d) with your permissions on everything the sandbox leaves reachable; "+
		"the boundary is the sandbox, not the cwd: the whole workspace is writable.\n", os.Getuid())
	fmt.Fprintf(&b, "Can read and execute: %s.\n", strings.Join(id.Policy.ReadExec, ", "))
	rw := append([]string{"the workspace " + id.Workspace.Path, "a private HOME and TMPDIR for this action"}, id.Policy.ReadWrite...)
	fmt.Fprintf(&b, "Can read and write: %s.\n", strings.Join(rw, ", "))
	if cache != "" {
		fmt.Fprintf(&b, "Persistent cache: %s is this workspace's cache, kept after the action and shared by every action of this workspace "+
			"(and no other); %s point into it, so what one action leaves there, another builds from.\n", cache, cacheVars(id, cache))
	}
	b.WriteString("Prevented: changing the mode, owner, extended attributes or times of anything outside those (the broker answers those calls itself), and setting or creating setuid or setgid files anywhere.\n")
	fmt.Fprintf(&b, "Detected, not prevented: changes to what git, direnv and editors run later (%s); they are listed in the receipt.\n",
		strings.Join(protectedNames, ", "))
	fmt.Fprintf(&b, "The workspace was checked for hard links to files outside it (%d files); a process outside the sandbox could still plant one during the run.\n", aliasChecked)
	fmt.Fprintf(&b, "No network: it cannot open sockets of any family or reach other local processes. Devices: %s.\n", strings.Join(id.Policy.Devices, ", "))
	fmt.Fprintf(&b, "Limits (profile %s): %s.\n", id.Profile, ProfileLimits(id.Profile))
	b.WriteString(resources)
	if b.Len() > maxLimitations {
		return strings.ToValidUTF8(b.String()[:maxLimitations-len(" …")], "") + " …"
	}
	return b.String()
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

// cacheVars names the identity's variables that point into cache.
func cacheVars(id *wire.CommandIdentity, cache string) string {
	var names []string
	for _, kv := range id.Env {
		if strings.HasPrefix(kv.Value, cache+"/") {
			names = append(names, kv.Name)
		}
	}
	if len(names) == 0 {
		return "no variables"
	}
	return strings.Join(names, ", ")
}
