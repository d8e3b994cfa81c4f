package toolchain

import (
	"fmt"
	"path/filepath"
	"regexp"

	"warrant/wire"
)

// nodeVersion is how nvm names an installed Node.js.
var nodeVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// nvm: NVM_DIR (~/.nvm, or $XDG_CONFIG_HOME/nvm) holds nvm.sh and
// versions/node/vX.Y.Z, each a Node.js prefix (bin/node, bin/npm →
// lib/node_modules/npm). The prefix is the toolchain: npm and every
// globally installed package live in it. `npm install -g` writes there,
// so it fails: the prefix is read-only.
func nvm(h *Host, paths []string) (*Found, string) {
	dir, _ := h.place("NVM_DIR", ".nvm", ".config/nvm")
	if xdg, ok := h.Declared["XDG_CONFIG_HOME"]; ok && dir == "" {
		if _, declared := h.Declared["NVM_DIR"]; !declared {
			dir = canonicalDir(filepath.Join(xdg, "nvm"))
		}
	}
	file := canonical(paths)
	rest, ok := beneath(file, filepath.Join(dir, "versions", "node"))
	if !ok || len(rest) < 2 || !nodeVersion.MatchString(rest[0]) {
		return nil, ""
	}
	if !isFile(dir, "nvm.sh") {
		return nil, fmt.Sprintf("%s is in %s/versions/node, but %s has no nvm.sh: not nvm's directory", file, dir, dir)
	}
	if !isDir(dir, "versions/node/"+rest[0]) {
		return nil, fmt.Sprintf("%s is in %s/versions/node/%s, which is not a directory of its own", file, dir, rest[0])
	}
	return found(wire.ToolchainNvm, rest[0], filepath.Join(dir, "versions", "node", rest[0]),
		fmt.Sprintf("%s is a program of the Node.js %s that nvm installed in %s", file, rest[0], dir)), ""
}

// volta: VOLTA_HOME (~/.volta) holds tools/image/TOOL/VERSION, each a
// prefix, and bin/, its shims (volta-shim, which picks a version from
// the project and writes its own state under VOLTA_HOME at every run).
// An image's program is a toolchain; a shim is left as it is, with the
// way to the image.
func volta(h *Host, paths []string) (*Found, string) {
	home, _ := h.place("VOLTA_HOME", ".volta")
	file := canonical(paths)
	if rest, ok := beneath(file, filepath.Join(home, "tools", "image")); ok && len(rest) >= 3 {
		tool, version := rest[0], rest[1]
		if !validName(tool) || !validName(version) || !isDir(home, "tools/image/"+tool+"/"+version) {
			return nil, fmt.Sprintf("%s is in Volta's images, but not in a directory tools/image/TOOL/VERSION of its own", file)
		}
		return found(wire.ToolchainVolta, tool+" "+version, filepath.Join(home, "tools", "image", tool, version),
			fmt.Sprintf("%s is a program of the Volta image %s %s in %s", file, tool, version, home)), ""
	}
	if p, rest, ok := anyBeneath(paths, filepath.Join(home, "bin")); ok && len(rest) == 1 {
		return nil, fmt.Sprintf("%s is a Volta shim, which chooses a version when it runs and writes under %s; "+
			"run the image's program instead: %s/tools/image/TOOL/VERSION/bin/%s", p, home, home, rest[0])
	}
	return nil, ""
}
