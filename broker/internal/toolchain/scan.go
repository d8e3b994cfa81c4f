package toolchain

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// maxCandidates bounds the programs Candidates names, and maxPerPlace
// those of one place (a manager's versions, a directory of JDKs).
const (
	maxCandidates = 256
	maxPerPlace   = 32
)

// Candidates are programs at the layouts' known places, one for each
// toolchain installed there (a manager's proxy or shim, each version's
// first program), for `broker toolchains` to try with Find. Each place is
// listed by descriptor, without following symlinks, at most maxPerPlace
// entries.
func Candidates(h Host) []string {
	var out, seen []string // seen: the canonical files, one candidate each
	add := func(ps ...string) {
		for _, p := range ps {
			real, err := filepath.EvalSymlinks(p)
			if err != nil || len(out) == maxCandidates || slices.Contains(seen, real) {
				continue
			}
			if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				out, seen = append(out, p), append(seen, real)
			}
		}
	}
	if h.Home != "" {
		add(filepath.Join(h.Home, ".cargo", "bin", "cargo"), filepath.Join(h.Home, ".cargo", "bin", "rustc"))
	}
	if home, _ := h.place("RUSTUP_HOME", ".rustup"); home != "" {
		add(each(home, "toolchains", "bin/cargo")...)
	}
	if root, _ := h.place("PYENV_ROOT", ".pyenv"); root != "" {
		add(filepath.Join(root, "shims", "python3"), filepath.Join(root, "shims", "python"))
		add(each(root, "versions", "bin/python3")...)
	}
	if dir, _ := h.place("NVM_DIR", ".nvm", ".config/nvm"); dir != "" {
		add(each(dir, "versions/node", "bin/node")...)
	}
	if home, _ := h.place("VOLTA_HOME", ".volta"); home != "" {
		add(eachFirst(home, "tools/image", 2)...)
	}
	if dir, _ := h.place("SDKMAN_DIR", ".sdkman"); dir != "" {
		add(eachFirst(dir, "candidates", 2)...)
	}
	if dir, _ := h.place("ASDF_DATA_DIR", ".asdf"); dir != "" {
		add(eachFirst(dir, "installs", 2)...)
	}
	if dir, _ := h.place("MISE_DATA_DIR", ".local/share/mise"); dir != "" {
		add(eachFirst(dir, "installs", 2)...)
	}
	for _, p := range brewPrefixes {
		if p, _ = cutHome(p, h.Home); p != "" {
			if prefix := canonicalDir(p); prefix != "" && isDir(prefix, "Cellar") {
				add(eachFirst(prefix, "Cellar", 2)...)
			}
		}
	}
	add("/usr/local/go/bin/go")
	if h.Home != "" {
		add(each(filepath.Join(h.Home, "sdk"), ".", "bin/go")...)
	}
	for _, d := range []string{"/usr/lib/jvm", "/usr/java", "/opt/java"} {
		add(each(d, ".", "bin/java")...)
	}
	return out
}

// each is dir/sub/NAME/prog for each NAME listed in dir/sub.
func each(dir, sub, prog string) []string {
	dir = canonicalDir(dir)
	if dir == "" {
		return nil
	}
	ns, _ := names(dir, sub)
	if len(ns) > maxPerPlace {
		ns = ns[:maxPerPlace]
	}
	slices.Sort(ns)
	var out []string
	for _, n := range ns {
		out = append(out, filepath.Join(dir, sub, n, prog))
	}
	return out
}

// eachFirst is, for each directory depth levels below dir/sub (TOOL/
// VERSION), the first program of its bin/ in name order.
func eachFirst(dir, sub string, depth int) []string {
	dirs := []string{sub}
	for range depth {
		var next []string
		for _, d := range dirs {
			ns, _ := names(dir, d)
			slices.Sort(ns)
			for _, n := range ns {
				if len(next) < maxPerPlace && validName(n) && n != "current" && isDir(dir, d+"/"+n) {
					next = append(next, d+"/"+n)
				}
			}
		}
		dirs = next
	}
	var out []string
	for _, d := range dirs {
		ns, err := names(dir, d+"/bin")
		if err != nil {
			continue
		}
		slices.Sort(ns)
		for _, n := range ns {
			if fi, err := os.Stat(filepath.Join(dir, d, "bin", n)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				out = append(out, filepath.Join(dir, d, "bin", n))
				break
			}
		}
	}
	return out
}

// Reach is how identity records the program at the absolute path p: the
// path of each symlink it follows (their directories resolved), then the
// canonical file; at most 40 links.
func Reach(p string) ([]string, error) {
	var paths []string
	for range 40 {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return nil, err
		}
		p = filepath.Join(dir, filepath.Base(p))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return append(paths, p), nil
		}
		paths = append(paths, p)
		target, err := os.Readlink(p)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		p = target
	}
	return nil, &os.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
}
