package toolchain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"warrant/wire"
)

// rustup: CARGO_HOME/bin holds the rustup binary and its proxies (cargo,
// rustc, … as hard links or symlinks to it); RUSTUP_HOME (~/.rustup)
// holds settings.toml and toolchains/NAME. A proxy reads RUSTUP_HOME
// (which the private HOME hides) to pick a toolchain and execs
// RUSTUP_HOME/toolchains/NAME/bin/PROGRAM.
//
// The toolchain is resolved here, from RUSTUP_TOOLCHAIN when the
// operator declared it, else settings.toml's default_toolchain, and
// pinned with RUSTUP_TOOLCHAIN: the card names what runs, and nothing in
// the workspace (rust-toolchain.toml, a directory override) chooses
// another, nor makes rustup download one. RUSTUP_HOME is granted
// read-only: a proxy that runs a pinned, installed toolchain writes
// nothing there. CARGO_HOME (the registry, git checkouts, locks) is the
// workspace cache's (broker/internal/caches), never ~/.cargo, which
// holds credentials.toml. cargo finds rustc on PATH, which is the
// sanitized one, so RUSTC and RUSTDOC name the toolchain's own.
func rustup(h *Host, paths []string) (*Found, string) {
	file := canonical(paths)
	home, _ := h.place("RUSTUP_HOME", ".rustup")
	if rest, ok := beneath(file, filepath.Join(home, "toolchains")); ok && len(rest) >= 3 && rest[1] == "bin" {
		name := rest[0]
		if !validName(name) || !isDir(home, "toolchains/"+name) {
			return nil, fmt.Sprintf("%s is in %s/toolchains/%s, which is not an installed toolchain", file, home, name)
		}
		root := filepath.Join(home, "toolchains", name)
		f := found(wire.ToolchainRustup, name, root, fmt.Sprintf("%s is a program of the rustup toolchain %s in %s", file, name, home))
		setRustc(f, h, root)
		return f, ""
	}
	if !isRustupProxy(file) {
		return nil, ""
	}
	if home == "" {
		return nil, fmt.Sprintf("%s is rustup or one of its proxies, but there is no rustup home (RUSTUP_HOME, or ~/.rustup)", file)
	}
	name, source, why := rustupToolchain(h, home)
	if why != "" {
		return nil, fmt.Sprintf("%s is rustup or one of its proxies, but %s", file, why)
	}
	f := found(wire.ToolchainRustup, name, home,
		fmt.Sprintf("%s is %s; the toolchain is %s, %s, pinned with RUSTUP_TOOLCHAIN", paths[0], proxyWords(paths[0], file), name, source))
	f.set(h, "RUSTUP_HOME", home)
	f.set(h, "RUSTUP_TOOLCHAIN", name)
	setRustc(f, h, filepath.Join(home, "toolchains", name))
	return f, ""
}

// setRustc points RUSTC and RUSTDOC at the toolchain's own programs.
func setRustc(f *Found, h *Host, root string) {
	for _, v := range []struct{ name, prog string }{{"RUSTC", "rustc"}, {"RUSTDOC", "rustdoc"}} {
		if isFile(root, "bin/"+v.prog) {
			f.set(h, v.name, filepath.Join(root, "bin", v.prog))
		}
	}
}

// isRustupProxy reports whether file is rustup itself or one of its
// proxies: the same file as the "rustup" beside it (rustup-init makes
// the proxies hard links of it, or symlinks, which identity has
// resolved to it).
func isRustupProxy(file string) bool {
	a, err := os.Lstat(file)
	if err != nil || !a.Mode().IsRegular() {
		return false
	}
	b, err := os.Lstat(filepath.Join(filepath.Dir(file), "rustup"))
	return err == nil && os.SameFile(a, b)
}

// proxyWords says how prog is rustup, whose file is file.
func proxyWords(prog, file string) string {
	switch {
	case prog != file:
		return "rustup's proxy (a link to " + file + ")"
	case filepath.Base(file) == "rustup":
		return "rustup itself"
	}
	return "rustup's proxy (the same file as " + filepath.Join(filepath.Dir(file), "rustup") + ")"
}

// rustupToolchain is the installed toolchain a proxy runs: the declared
// RUSTUP_TOOLCHAIN, else settings.toml's default_toolchain; a short name
// ("stable") is the one installed toolchain whose name starts with it and
// a dash, as rustup completes it with the host's triple. It says where
// the name came from, or why there is none.
func rustupToolchain(h *Host, home string) (name, source, why string) {
	if v, ok := h.Declared["RUSTUP_TOOLCHAIN"]; ok {
		name, source = v, "the declared RUSTUP_TOOLCHAIN"
	} else {
		b, err := readSmall(home, "settings.toml")
		if err != nil {
			return "", "", readError(home+"/settings.toml", err)
		}
		if name = defaultToolchain(string(b)); name == "" {
			return "", "", "there is no default toolchain in " + home + "/settings.toml"
		}
		source = "the default in " + home + "/settings.toml"
	}
	if !validName(name) {
		return "", "", fmt.Sprintf("%q is not a toolchain name", name)
	}
	if isDir(home, "toolchains/"+name) {
		return name, source, ""
	}
	all, _ := names(home, "toolchains")
	var match []string
	for _, n := range all {
		if strings.HasPrefix(n, name+"-") && validName(n) && isDir(home, "toolchains/"+n) {
			match = append(match, n)
		}
	}
	if len(match) == 1 {
		return match[0], source + " (" + name + ")", ""
	}
	return "", "", fmt.Sprintf("the toolchain %s (%s) is not installed in %s/toolchains as a directory of its own", name, source, home)
}
