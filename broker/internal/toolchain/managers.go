package toolchain

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"warrant/wire"
)

// candidateName is how SDKMAN! names a candidate (java, gradle, maven…).
var candidateName = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// sdkman: SDKMAN_DIR (~/.sdkman) holds candidates/CANDIDATE/VERSION,
// each a prefix, and candidates/CANDIDATE/current, a symlink to one
// (identity has resolved it). SDKMAN! sets CANDIDATE_HOME for each
// (JAVA_HOME, GRADLE_HOME, MAVEN_HOME…); so does this.
func sdkman(h *Host, paths []string) (*Found, string) {
	dir, _ := h.place("SDKMAN_DIR", ".sdkman")
	file := canonical(paths)
	rest, ok := beneath(file, filepath.Join(dir, "candidates"))
	if !ok || len(rest) < 3 {
		return nil, ""
	}
	cand, version := rest[0], rest[1]
	if !candidateName.MatchString(cand) || !validName(version) || version == "current" || !isDir(dir, "candidates/"+cand+"/"+version) {
		return nil, fmt.Sprintf("%s is in SDKMAN!'s candidates, but not in a directory candidates/CANDIDATE/VERSION of its own", file)
	}
	root := filepath.Join(dir, "candidates", cand, version)
	f := found(wire.ToolchainSdkman, cand+" "+version, root,
		fmt.Sprintf("%s is a program of the SDKMAN! candidate %s %s in %s", file, cand, version, dir))
	f.set(h, strings.ToUpper(cand)+"_HOME", root)
	return f, ""
}

// asdf: ASDF_DATA_DIR (~/.asdf) holds installs/PLUGIN/VERSION, each a
// prefix, and shims/ (scripts that run `asdf exec`, which chooses a
// version from .tool-versions files). An install's program is a
// toolchain; a shim is left as it is, with the way to the install.
func asdf(h *Host, paths []string) (*Found, string) {
	dir, _ := h.place("ASDF_DATA_DIR", ".asdf")
	return installs(h, paths, dir, wire.ToolchainAsdf, "asdf")
}

// mise: MISE_DATA_DIR ($XDG_DATA_HOME/mise, ~/.local/share/mise) holds
// installs/TOOL/VERSION (and symlinks such as installs/TOOL/20 → 20.11.0,
// resolved by identity) and shims/ (symlinks to mise itself, which
// chooses a version from the project's configuration).
func mise(h *Host, paths []string) (*Found, string) {
	dir, declared := h.place("MISE_DATA_DIR", ".local/share/mise")
	if xdg, ok := h.Declared["XDG_DATA_HOME"]; ok && !declared {
		dir = canonicalDir(filepath.Join(xdg, "mise"))
	}
	return installs(h, paths, dir, wire.ToolchainMise, "mise")
}

// installs recognises the installs/TOOL/VERSION and shims/ layout of asdf
// and mise under dir.
func installs(h *Host, paths []string, dir string, kind wire.ToolchainKind, manager string) (*Found, string) {
	file := canonical(paths)
	if rest, ok := beneath(file, filepath.Join(dir, "installs")); ok && len(rest) >= 3 {
		tool, version := rest[0], rest[1]
		if !validName(tool) || !validName(version) || !isDir(dir, "installs/"+tool+"/"+version) {
			return nil, fmt.Sprintf("%s is in %s's installs, but not in a directory installs/TOOL/VERSION of its own", file, manager)
		}
		root := filepath.Join(dir, "installs", tool, version)
		f := found(kind, tool+" "+version, root, fmt.Sprintf("%s is a program of %s %s, installed by %s in %s", file, tool, version, manager, dir))
		homeVars(f, h, root)
		return f, ""
	}
	if p, rest, ok := anyBeneath(paths, filepath.Join(dir, "shims")); ok && len(rest) == 1 {
		return nil, fmt.Sprintf("%s is a %s shim, which chooses a version when it runs from files in the project and your home; "+
			"run the installed program instead: %s/installs/TOOL/VERSION/bin/%s", p, manager, dir, rest[0])
	}
	return nil, ""
}

// homeVars sets what a Go root or a JDK inside an install needs: GOROOT
// (the install itself, or its go/), JAVA_HOME.
func homeVars(f *Found, h *Host, root string) {
	for _, r := range []string{root, filepath.Join(root, "go")} {
		if _, ok := goVersion(r); ok {
			f.set(h, "GOROOT", r)
			break
		}
	}
	if _, ok := javaVersion(root); ok {
		f.set(h, "JAVA_HOME", root)
	}
}
