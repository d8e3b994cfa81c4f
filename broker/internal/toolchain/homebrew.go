package toolchain

import (
	"fmt"
	"os"
	"path/filepath"

	"warrant/wire"
)

// brewPrefixes are Homebrew's documented prefixes: Linux's default and a
// home install, Apple silicon's, and Intel macOS's. HOMEBREW_PREFIX,
// when declared, is tried first.
var brewPrefixes = []string{"/home/linuxbrew/.linuxbrew", "~/.linuxbrew", "/opt/homebrew", "/usr/local"}

// homebrew: a prefix holds bin/brew, Cellar/FORMULA/VERSION (each
// formula's keg), and bin/, opt/, lib/, share/ links into the kegs. A
// keg's programs load libraries and data from the whole prefix (its
// opt/ links, its lib/, Linuxbrew's own glibc), so the prefix is the
// toolchain. Only the known prefixes count: a Cellar anywhere else is
// not taken for Homebrew's.
func homebrew(h *Host, paths []string) (*Found, string) {
	file := canonical(paths)
	prefixes := brewPrefixes
	if v, ok := h.Declared["HOMEBREW_PREFIX"]; ok {
		prefixes = append([]string{v}, prefixes...)
	}
	for _, p := range prefixes {
		if rest, ok := cutHome(p, h.Home); ok {
			p = rest
		} else if p == "" {
			continue
		}
		prefix := canonicalDir(p)
		rest, ok := beneath(file, filepath.Join(prefix, "Cellar"))
		if !ok || len(rest) < 3 {
			continue
		}
		formula, version := rest[0], rest[1]
		if fi, err := os.Lstat(filepath.Join(prefix, "bin", "brew")); err != nil || fi.IsDir() {
			return nil, fmt.Sprintf("%s is in %s/Cellar, but %s has no bin/brew: not a Homebrew prefix", file, prefix, prefix)
		}
		if !validName(formula) || !validName(version) || !isDir(prefix, "Cellar/"+formula+"/"+version) {
			return nil, fmt.Sprintf("%s is in %s/Cellar, but not in a keg Cellar/FORMULA/VERSION of its own", file, prefix)
		}
		return found(wire.ToolchainHomebrew, formula+" "+version, prefix,
			fmt.Sprintf("%s is a program of the Homebrew formula %s %s in the prefix %s", file, formula, version, prefix)), ""
	}
	return nil, ""
}

// cutHome expands a leading "~/" with home; ok is false when p has none,
// and p is "" when it has one but there is no home.
func cutHome(p, home string) (string, bool) {
	if len(p) < 2 || p[:2] != "~/" {
		return p, false
	}
	if home == "" {
		return "", true
	}
	return filepath.Join(home, p[2:]), true
}
