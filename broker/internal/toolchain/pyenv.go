package toolchain

import (
	"fmt"
	"path/filepath"
	"strings"

	"warrant/wire"
)

// pyenv: PYENV_ROOT (~/.pyenv) holds shims/ (bash scripts that run
// `pyenv exec`), libexec/, plugins/ and versions/NAME, each version a
// prefix of its own. A shim is run as requested (it is what was
// approved): PYENV_ROOT is granted read-only and the version pinned with
// PYENV_VERSION, from the declared PYENV_VERSION or the global version
// file (PYENV_ROOT/version), so that a .python-version in the workspace
// chooses nothing and the card names what runs. A version's own program
// (versions/NAME/bin/python3) needs only its prefix.
func pyenv(h *Host, paths []string) (*Found, string) {
	root, _ := h.place("PYENV_ROOT", ".pyenv")
	file := canonical(paths)
	if rest, ok := beneath(file, filepath.Join(root, "versions")); ok && len(rest) >= 2 {
		name := rest[0]
		if !validName(name) || !isDir(root, "versions/"+name) {
			return nil, fmt.Sprintf("%s is in %s/versions/%s, which is not a pyenv version directory", file, root, name)
		}
		return found(wire.ToolchainPyenv, name, filepath.Join(root, "versions", name),
			fmt.Sprintf("%s is a program of the pyenv version %s in %s", file, name, root)), ""
	}
	if rest, ok := beneath(file, filepath.Join(root, "shims")); !ok || len(rest) != 1 {
		return nil, ""
	}
	version, source, why := pyenvVersion(h, root)
	if why != "" {
		return nil, fmt.Sprintf("%s is a pyenv shim, but %s", file, why)
	}
	f := found(wire.ToolchainPyenv, version, root,
		fmt.Sprintf("%s is a pyenv shim; the version is %s, %s, pinned with PYENV_VERSION", file, version, source))
	f.set(h, "PYENV_ROOT", root)
	f.set(h, "PYENV_VERSION", version)
	return f, ""
}

// pyenvVersion is the version a shim runs, as PYENV_VERSION spells it
// (names joined by ":"): the declared PYENV_VERSION, else the words of
// PYENV_ROOT/version (lines starting with "#" skipped), else "system".
// Each name must be installed (a directory of versions/) or "system".
func pyenvVersion(h *Host, root string) (version, source, why string) {
	var words []string
	if v, ok := h.Declared["PYENV_VERSION"]; ok {
		words, source = strings.Split(v, ":"), "the declared PYENV_VERSION"
	} else {
		b, err := readSmall(root, "version")
		switch {
		case err == nil:
			source, words = "the global version in "+root+"/version", versionWords(string(b))
		case kindAt(root, "version") != 0:
			return "", "", readError(root+"/version", err)
		}
		if len(words) == 0 {
			words, source = []string{"system"}, "pyenv's default when "+root+"/version names none"
		}
	}
	for _, w := range words {
		switch {
		case !validName(w):
			return "", "", fmt.Sprintf("%q (%s) is not a version name", w, source)
		case w != "system" && !isDir(root, "versions/"+w):
			return "", "", fmt.Sprintf("the version %s (%s) is not installed in %s/versions as a directory of its own", w, source, root)
		}
	}
	return strings.Join(words, ":"), source, ""
}
