package policy

import (
	"fmt"
	"os"
	"slices"
	"strings"

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

// Protection is the card's sentence on the protected paths: by is
// wire.ProtectedByMount or wire.ProtectedByDetect, why says why no mount
// namespace can be had (detect only).
func Protection(by, why string) string {
	names := strings.Join(protectedNames, ", ")
	if by == wire.ProtectedByMount {
		return "Read-only (binds in the action's own mount namespace): what git, direnv, editors and coding agents run or obey later (" +
			names + "); creating one that does not exist yet is detected, not prevented, and listed in the receipt."
	}
	return "Detected, not prevented (" + why + "): changes to what git, direnv, editors and coding agents run or obey later (" +
		names + "); they are listed in the receipt."
}

// Limitations is the plain text an approval request carries beside the
// identity: who the action runs as, where its boundary really is, what it
// can read and write (and what of /etc is withheld: etcWords), the
// workspace's persistent cache (cache, one of the
// read-write paths; "" for none) and that it is shared, how many files
// the workspace's alias scan checked (aliasChecked) and what that scan
// cannot promise, that it has no network, its profile's limits, and
// the host's sentences: protection, how the protected paths are guarded
// (Protection), and resources, on its memory and process-count limits
// (what enforces each on this host, or that it is not limited, why and
// how to get it; broker/lifecycle's Enforcement.Sentence).
func Limitations(id *wire.CommandIdentity, aliasChecked int, cache, protection, resources string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Runs as your user (uid %d) with your permissions on everything the sandbox leaves reachable; "+
		"the boundary is the sandbox, not the cwd: the whole workspace is writable.\n", os.Getuid())
	read := id.Policy.ReadExec
	etc, withheld := etcWords(&id.Policy, maxEtcWords)
	if len(id.Policy.ReadEntries) > 0 {
		read = append(slices.Clone(read), etc+" but what it withholds (below)")
	}
	fmt.Fprintf(&b, "Can read and execute: %s.\n", strings.Join(read, ", "))
	if withheld != "" {
		b.WriteString(withheld + "\n")
	}
	rw := append([]string{"the workspace " + id.Workspace.Path, "a private HOME and TMPDIR for this action"}, id.Policy.ReadWrite...)
	fmt.Fprintf(&b, "Can read and write: %s.\n", strings.Join(rw, ", "))
	b.WriteString("Not hidden: whether a path outside exists, and its owner, mode, size and times (stat); Landlock has no hook for it.\n")
	if cache != "" {
		fmt.Fprintf(&b, "Persistent cache: %s is this workspace's cache, kept after the action and shared by every action of this workspace "+
			"(and no other); %s point into it, so what one action leaves there, another builds from.\n", cache, cacheVars(id, cache))
	}
	b.WriteString("Prevented: changing the mode, owner, extended attributes or times of anything outside those (the broker answers those calls itself), and setting or creating setuid or setgid files anywhere.\n")
	b.WriteString(protection + "\n")
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
