package toolchain

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"warrant/wire"
)

// Every layout is tried on a fake tree built from the layout's documented
// conventions: the directories and marker files each tool creates, with
// stand-in programs. Only rustup, pyenv, Go and the JDKs were also tried
// on real installs (integration/toolchains_test.go).

// build writes files under root: a name ending in "*" is an executable
// (its content a stand-in), "name -> target" a symlink, a name ending in
// "/" a directory; anything else a regular file holding its value.
func build(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		if link, target, ok := strings.Cut(name, " -> "); ok {
			p := filepath.Join(root, link)
			mkdir(t, filepath.Dir(p))
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			mkdir(t, p)
			continue
		}
		mkdir(t, filepath.Dir(p))
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// canon is the canonical path of p.
func canon(t *testing.T, p string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// reached is how identity would record a program at p: each symlink hop
// (their directories resolved), then the canonical file.
func reached(t *testing.T, p string) []string {
	t.Helper()
	p = filepath.Join(canon(t, filepath.Dir(p)), filepath.Base(p))
	var paths []string
	for range 40 {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return append(paths, p)
		}
		paths = append(paths, p)
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = filepath.Join(canon(t, filepath.Dir(target)), filepath.Base(target))
	}
	t.Fatalf("%s: too many links", p)
	return nil
}

// want is what a test expects Find to return.
type want struct {
	kind wire.ToolchainKind
	name string
	root string            // relative to the test's directory
	env  map[string]string // values relative to the test's directory when they start with "~/"
	why  string            // a word of the explanation
}

// check runs Find for the program at prog and compares.
func check(t *testing.T, h Host, dir, prog string, w want) {
	t.Helper()
	f, why := Find(h, reached(t, filepath.Join(dir, prog)))
	if f == nil {
		t.Fatalf("%s: no toolchain found: %s", prog, why)
	}
	abs := func(v string) string {
		if rest, ok := strings.CutPrefix(v, "~/"); ok {
			return filepath.Join(canon(t, dir), rest)
		}
		return v
	}
	tc := f.Toolchain
	if tc.Kind != w.kind || tc.Name != w.name || tc.Root != abs("~/"+w.root) {
		t.Errorf("%s: found %s %q at %s, want %s %q at %s", prog, tc.Kind, tc.Name, tc.Root, w.kind, w.name, abs("~/"+w.root))
	}
	got := map[string]string{}
	var names []string
	for _, kv := range f.Env {
		got[kv.Name] = kv.Value
		names = append(names, kv.Name)
	}
	if !slices.IsSorted(names) || !slices.Equal(names, tc.Vars) {
		t.Errorf("%s: env %v not sorted or not the toolchain's vars %v", prog, names, tc.Vars)
	}
	wantEnv := map[string]string{}
	for k, v := range w.env {
		wantEnv[k] = abs(v)
	}
	if !mapsEqual(got, wantEnv) {
		t.Errorf("%s: env %v, want %v", prog, got, wantEnv)
	}
	if !strings.Contains(f.Why, w.why) {
		t.Errorf("%s: why %q does not say %q", prog, f.Why, w.why)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// none runs Find for the program at prog and expects no toolchain, with
// an explanation that says why.
func none(t *testing.T, h Host, dir, prog, why string) {
	t.Helper()
	f, got := Find(h, reached(t, filepath.Join(dir, prog)))
	if f != nil {
		t.Fatalf("%s: found %+v, want none (%s)", prog, f.Toolchain, why)
	}
	if !strings.Contains(got, why) {
		t.Errorf("%s: why %q does not say %q", prog, got, why)
	}
}

const stable = "stable-x86_64-unknown-linux-gnu"

// rustupTree is rustup's layout (rustup.rs: CARGO_HOME/bin holds the
// rustup binary and its proxies; RUSTUP_HOME holds settings.toml and
// toolchains/NAME/bin).
func rustupTree(t *testing.T, settings string) (string, Host) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		".cargo/bin/rustup*":                                             "rustup",
		".cargo/bin/cargo -> rustup":                                     "",
		".cargo/bin/rustc -> rustup":                                     "",
		".cargo/bin/rg*":                                                 "ripgrep, installed by cargo install",
		".cargo/credentials.toml":                                        "token = \"secret\"",
		".rustup/settings.toml":                                          settings,
		".rustup/toolchains/" + stable + "/bin/rustc*":                   "",
		".rustup/toolchains/" + stable + "/bin/rustdoc*":                 "",
		".rustup/toolchains/" + stable + "/bin/cargo*":                   "",
		".rustup/toolchains/nightly-x86_64-unknown-linux-gnu/bin/rustc*": "",
		".rustup/downloads/":                                             "",
	})
	return dir, Host{Home: dir}
}

func TestRustup(t *testing.T) {
	dir, h := rustupTree(t, "version = \"12\"\ndefault_toolchain = \""+stable+"\"\nprofile = \"default\"\n\n[overrides]\n\"/x\" = \"nightly-x86_64-unknown-linux-gnu\"\n")
	tc := "~/.rustup/toolchains/" + stable + "/bin/"
	proxy := want{kind: wire.ToolchainRustup, name: stable, root: ".rustup", why: "proxy",
		env: map[string]string{"RUSTUP_HOME": "~/.rustup", "RUSTUP_TOOLCHAIN": stable, "RUSTC": tc + "rustc", "RUSTDOC": tc + "rustdoc"}}
	t.Run("symlinked proxy", func(t *testing.T) { check(t, h, dir, ".cargo/bin/cargo", proxy) })
	t.Run("rustup itself", func(t *testing.T) {
		itself := proxy
		itself.why = "rustup itself"
		check(t, h, dir, ".cargo/bin/rustup", itself)
	})
	t.Run("hard-linked proxy", func(t *testing.T) {
		if err := os.Link(filepath.Join(dir, ".cargo/bin/rustup"), filepath.Join(dir, ".cargo/bin/rustfmt")); err != nil {
			t.Fatal(err)
		}
		check(t, h, dir, ".cargo/bin/rustfmt", proxy)
	})
	t.Run("a toolchain's own program", func(t *testing.T) {
		check(t, h, dir, ".rustup/toolchains/"+stable+"/bin/cargo", want{kind: wire.ToolchainRustup, name: stable,
			root: ".rustup/toolchains/" + stable, why: "toolchain", env: map[string]string{"RUSTC": tc + "rustc", "RUSTDOC": tc + "rustdoc"}})
	})
	t.Run("declared toolchain", func(t *testing.T) {
		d := Host{Home: dir, Declared: map[string]string{"RUSTUP_TOOLCHAIN": "nightly-x86_64-unknown-linux-gnu"}}
		check(t, d, dir, ".cargo/bin/cargo", want{kind: wire.ToolchainRustup, name: "nightly-x86_64-unknown-linux-gnu", root: ".rustup",
			why: "RUSTUP_TOOLCHAIN", env: map[string]string{"RUSTUP_HOME": "~/.rustup", "RUSTC": "~/.rustup/toolchains/nightly-x86_64-unknown-linux-gnu/bin/rustc"}})
	})
	t.Run("declared home", func(t *testing.T) {
		other := t.TempDir()
		if err := os.Rename(filepath.Join(dir, ".rustup"), filepath.Join(other, "rh")); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(filepath.Join(other, "rh"), filepath.Join(dir, ".rustup"))
		none(t, h, dir, ".cargo/bin/cargo", "no rustup home")
		d := Host{Home: dir, Declared: map[string]string{"RUSTUP_HOME": filepath.Join(other, "rh")}}
		f, why := Find(d, reached(t, filepath.Join(dir, ".cargo/bin/cargo")))
		if f == nil || f.Toolchain.Root != filepath.Join(canon(t, other), "rh") || slices.Contains(f.Toolchain.Vars, "RUSTUP_HOME") {
			t.Fatalf("declared RUSTUP_HOME: %+v, %s", f, why)
		}
	})
	t.Run("cargo install'd program", func(t *testing.T) { none(t, h, dir, ".cargo/bin/rg", "not in a known toolchain layout") })
}

func TestRustupShortName(t *testing.T) {
	dir, h := rustupTree(t, "default_toolchain = \"stable\"\n")
	check(t, h, dir, ".cargo/bin/cargo", want{kind: wire.ToolchainRustup, name: stable, root: ".rustup", why: "stable",
		env: map[string]string{"RUSTUP_HOME": "~/.rustup", "RUSTUP_TOOLCHAIN": stable,
			"RUSTC": "~/.rustup/toolchains/" + stable + "/bin/rustc", "RUSTDOC": "~/.rustup/toolchains/" + stable + "/bin/rustdoc"}})
}

// What rustup cannot be resolved to leaves the program as it is today.
func TestRustupUnresolved(t *testing.T) {
	for name, c := range map[string]struct{ settings, why string }{
		"no default":        {"version = \"12\"\n", "no default toolchain"},
		"default in table":  {"[overrides]\ndefault_toolchain = \"" + stable + "\"\n", "no default toolchain"},
		"not installed":     {"default_toolchain = \"beta\"\n", "not installed"},
		"path in the name":  {"default_toolchain = \"../../etc\"\n", "not a toolchain name"},
		"absolute name":     {"default_toolchain = \"/opt/rust\"\n", "not a toolchain name"},
		"unquoted":          {"default_toolchain = stable\n", "no default toolchain"},
		"settings too long": {"# " + strings.Repeat("x", 70<<10) + "\ndefault_toolchain = \"" + stable + "\"\n", "larger than"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, h := rustupTree(t, c.settings)
			none(t, h, dir, ".cargo/bin/cargo", c.why)
		})
	}
	t.Run("linked toolchain", func(t *testing.T) {
		dir, h := rustupTree(t, "default_toolchain = \"mine\"\n")
		build(t, dir, map[string]string{".rustup/toolchains/mine -> /usr": ""})
		none(t, h, dir, ".cargo/bin/cargo", "not installed")
	})
	t.Run("settings a symlink", func(t *testing.T) {
		dir, h := rustupTree(t, "")
		os.Remove(filepath.Join(dir, ".rustup/settings.toml"))
		build(t, dir, map[string]string{"elsewhere.toml": "default_toolchain = \"" + stable + "\"\n",
			".rustup/settings.toml -> ../elsewhere.toml": ""})
		none(t, h, dir, ".cargo/bin/cargo", "settings.toml")
	})
	t.Run("settings a fifo", func(t *testing.T) {
		dir, h := rustupTree(t, "")
		p := filepath.Join(dir, ".rustup/settings.toml")
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		none(t, h, dir, ".cargo/bin/cargo", "not a regular file")
	})
}

func pyenvTree(t *testing.T, version string) (string, Host) {
	dir := t.TempDir()
	shim := "#!/usr/bin/env bash\nset -e\nexport PYENV_ROOT=\"" + dir + "/.pyenv\"\nexec \"" + dir + "/.pyenv/libexec/pyenv\" exec \"${0##*/}\" \"$@\"\n"
	files := map[string]string{
		".pyenv/libexec/pyenv*":                            "",
		".pyenv/shims/python3*":                            shim,
		".pyenv/versions/3.11.7/bin/python3.11*":           "",
		".pyenv/versions/3.11.7/bin/python3 -> python3.11": "",
		".pyenv/versions/3.12.1/bin/python3.12*":           "",
		".pyenv/versions/3.11.7/lib/python3.11/os.py":      "",
	}
	if version != "" {
		files[".pyenv/version"] = version
	}
	build(t, dir, files)
	return dir, Host{Home: dir}
}

func TestPyenv(t *testing.T) {
	dir, h := pyenvTree(t, "3.11.7\n")
	t.Run("shim", func(t *testing.T) {
		check(t, h, dir, ".pyenv/shims/python3", want{kind: wire.ToolchainPyenv, name: "3.11.7", root: ".pyenv", why: "shim",
			env: map[string]string{"PYENV_ROOT": "~/.pyenv", "PYENV_VERSION": "3.11.7"}})
	})
	t.Run("a version's own program", func(t *testing.T) {
		check(t, h, dir, ".pyenv/versions/3.11.7/bin/python3", want{kind: wire.ToolchainPyenv, name: "3.11.7",
			root: ".pyenv/versions/3.11.7", why: "version"})
	})
	t.Run("declared version", func(t *testing.T) {
		d := Host{Home: dir, Declared: map[string]string{"PYENV_VERSION": "3.12.1"}}
		check(t, d, dir, ".pyenv/shims/python3", want{kind: wire.ToolchainPyenv, name: "3.12.1", root: ".pyenv", why: "PYENV_VERSION",
			env: map[string]string{"PYENV_ROOT": "~/.pyenv"}})
	})
	for name, c := range map[string]struct{ version, name, why string }{
		"several, with a comment": {"# the default\n3.12.1\n3.11.7 system\n", "3.12.1:3.11.7:system", "shim"},
		"no version file":         {"", "system", "system"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, h := pyenvTree(t, c.version)
			check(t, h, dir, ".pyenv/shims/python3", want{kind: wire.ToolchainPyenv, name: c.name, root: ".pyenv", why: c.why,
				env: map[string]string{"PYENV_ROOT": "~/.pyenv", "PYENV_VERSION": c.name}})
		})
	}
	t.Run("too long a name", func(t *testing.T) {
		dir, h := pyenvTree(t, "")
		var words []string
		for i := range 3 {
			v := fmt.Sprintf("%d.%s", i, strings.Repeat("9", 100))
			mkdir(t, filepath.Join(dir, ".pyenv/versions", v))
			words = append(words, v)
		}
		build(t, dir, map[string]string{".pyenv/version": strings.Join(words, "\n")})
		none(t, h, dir, ".pyenv/shims/python3", "longer than 256 bytes")
	})
	for name, c := range map[string]struct{ version, why string }{
		"not installed": {"3.9.1\n", "not installed"},
		"a path":        {"../../../etc\n", "not a version name"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, h := pyenvTree(t, c.version)
			none(t, h, dir, ".pyenv/shims/python3", c.why)
		})
	}
}

func TestNvm(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		".nvm/nvm.sh":                           "# nvm",
		".nvm/versions/node/v20.11.0/bin/node*": "",
		".nvm/versions/node/v20.11.0/bin/npm -> ../lib/node_modules/npm/bin/npm-cli.js": "",
		".nvm/versions/node/v20.11.0/lib/node_modules/npm/bin/npm-cli.js*":              "#!/usr/bin/env node\n",
		"notnvm/versions/node/v20.11.0/bin/node*":                                       "",
	})
	h := Host{Home: dir}
	w := want{kind: wire.ToolchainNvm, name: "v20.11.0", root: ".nvm/versions/node/v20.11.0", why: "nvm"}
	check(t, h, dir, ".nvm/versions/node/v20.11.0/bin/node", w)
	check(t, h, dir, ".nvm/versions/node/v20.11.0/bin/npm", w)
	none(t, h, dir, "notnvm/versions/node/v20.11.0/bin/node", "not in a known toolchain layout")
	d := Host{Home: dir, Declared: map[string]string{"NVM_DIR": filepath.Join(dir, "notnvm")}}
	none(t, d, dir, "notnvm/versions/node/v20.11.0/bin/node", "nvm.sh")
}

func TestVolta(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		".volta/bin/volta-shim*":                            "",
		".volta/bin/node -> volta-shim":                     "",
		".volta/tools/image/node/20.11.0/bin/node*":         "",
		".volta/tools/image/node/20.11.0/lib/node_modules/": "",
	})
	h := Host{Home: dir}
	check(t, h, dir, ".volta/tools/image/node/20.11.0/bin/node",
		want{kind: wire.ToolchainVolta, name: "node 20.11.0", root: ".volta/tools/image/node/20.11.0", why: "Volta"})
	none(t, h, dir, ".volta/bin/node", "tools/image")
}

func TestSdkman(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		".sdkman/candidates/java/21.0.2-tem/bin/java*":  "",
		".sdkman/candidates/java/21.0.2-tem/release":    "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"21.0.2\"\n",
		".sdkman/candidates/java/current -> 21.0.2-tem": "",
		".sdkman/candidates/gradle/8.6/bin/gradle*":     "#!/bin/sh\n",
		".sdkman/candidates/gradle/8.6/lib/":            "",
	})
	h := Host{Home: dir}
	check(t, h, dir, ".sdkman/candidates/java/current/bin/java", want{kind: wire.ToolchainSdkman, name: "java 21.0.2-tem",
		root: ".sdkman/candidates/java/21.0.2-tem", why: "SDKMAN", env: map[string]string{"JAVA_HOME": "~/.sdkman/candidates/java/21.0.2-tem"}})
	check(t, h, dir, ".sdkman/candidates/gradle/8.6/bin/gradle", want{kind: wire.ToolchainSdkman, name: "gradle 8.6",
		root: ".sdkman/candidates/gradle/8.6", why: "SDKMAN", env: map[string]string{"GRADLE_HOME": "~/.sdkman/candidates/gradle/8.6"}})
}

func TestAsdf(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		".asdf/shims/node*":                            "#!/usr/bin/env bash\n# asdf-plugin: nodejs 20.11.0\nexec asdf exec \"node\" \"$@\"\n",
		".asdf/installs/nodejs/20.11.0/bin/node*":      "",
		".asdf/installs/golang/1.22.0/go/bin/go*":      "",
		".asdf/installs/golang/1.22.0/go/VERSION":      "go1.22.0\ntime 2024-02-01T00:00:00Z\n",
		".asdf/installs/golang/1.22.0/go/src/runtime/": "",
	})
	h := Host{Home: dir}
	check(t, h, dir, ".asdf/installs/nodejs/20.11.0/bin/node",
		want{kind: wire.ToolchainAsdf, name: "nodejs 20.11.0", root: ".asdf/installs/nodejs/20.11.0", why: "asdf"})
	check(t, h, dir, ".asdf/installs/golang/1.22.0/go/bin/go", want{kind: wire.ToolchainAsdf, name: "golang 1.22.0",
		root: ".asdf/installs/golang/1.22.0", why: "asdf", env: map[string]string{"GOROOT": "~/.asdf/installs/golang/1.22.0/go"}})
	none(t, h, dir, ".asdf/shims/node", "installs")
}

func TestMise(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		".local/share/mise/installs/python/3.12.1/bin/python3*":   "",
		".local/share/mise/installs/python/3.12 -> 3.12.1":        "",
		".local/share/mise/shims/python3 -> ../../../../bin/mise": "",
		"bin/mise*": "",
		"xdg/mise/installs/node/20.11.0/bin/node*": "",
	})
	h := Host{Home: dir}
	w := want{kind: wire.ToolchainMise, name: "python 3.12.1", root: ".local/share/mise/installs/python/3.12.1", why: "mise"}
	check(t, h, dir, ".local/share/mise/installs/python/3.12.1/bin/python3", w)
	check(t, h, dir, ".local/share/mise/installs/python/3.12/bin/python3", w)
	none(t, h, dir, ".local/share/mise/shims/python3", "installs")
	d := Host{Home: dir, Declared: map[string]string{"XDG_DATA_HOME": filepath.Join(dir, "xdg")}}
	check(t, d, dir, "xdg/mise/installs/node/20.11.0/bin/node",
		want{kind: wire.ToolchainMise, name: "node 20.11.0", root: "xdg/mise/installs/node/20.11.0", why: "mise"})
}

func TestHomebrew(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		".linuxbrew/Homebrew/bin/brew*":                  "#!/bin/bash\n",
		".linuxbrew/bin/brew -> ../Homebrew/bin/brew":    "",
		".linuxbrew/Cellar/jq/1.7.1/bin/jq*":             "",
		".linuxbrew/bin/jq -> ../Cellar/jq/1.7.1/bin/jq": "",
		".linuxbrew/opt/jq -> ../Cellar/jq/1.7.1":        "",
		"fake/Cellar/jq/1.7.1/bin/jq*":                   "",
		"fake/bin/":                                      "",
	})
	h := Host{Home: dir}
	w := want{kind: wire.ToolchainHomebrew, name: "jq 1.7.1", root: ".linuxbrew", why: "Homebrew"}
	check(t, h, dir, ".linuxbrew/bin/jq", w)
	check(t, h, dir, ".linuxbrew/opt/jq/bin/jq", w)
	// A Cellar outside the known prefixes is no prefix of Homebrew's.
	none(t, h, dir, "fake/Cellar/jq/1.7.1/bin/jq", "not in a known toolchain layout")
	d := Host{Home: dir, Declared: map[string]string{"HOMEBREW_PREFIX": filepath.Join(dir, "fake")}}
	none(t, d, dir, "fake/Cellar/jq/1.7.1/bin/jq", "bin/brew")
}

func TestGo(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		"sdk/go1.22.0/VERSION":                       "go1.22.0\ntime 2024-02-01T00:00:00Z\n",
		"sdk/go1.22.0/bin/go*":                       "",
		"sdk/go1.22.0/src/runtime/":                  "",
		"sdk/go1.22.0/pkg/tool/linux_amd64/compile*": "",
		"nogo/VERSION":                               "go1.22.0\n",
		"nogo/bin/go*":                               "",
		"notgo/VERSION":                              "1.2.3\n",
		"notgo/bin/go*":                              "",
		"notgo/src/runtime/":                         "",
		"bin/go -> ../sdk/go1.22.0/bin/go":           "",
	})
	h := Host{Home: filepath.Join(dir, "home")}
	w := want{kind: wire.ToolchainGo, name: "go1.22.0", root: "sdk/go1.22.0", why: "VERSION",
		env: map[string]string{"GOROOT": "~/sdk/go1.22.0"}}
	check(t, h, dir, "sdk/go1.22.0/bin/go", w)
	check(t, h, dir, "bin/go", w)
	check(t, h, dir, "sdk/go1.22.0/pkg/tool/linux_amd64/compile", w)
	none(t, h, dir, "nogo/bin/go", "not in a known toolchain layout")
	none(t, h, dir, "notgo/bin/go", "not in a known toolchain layout")
	t.Run("declared GOROOT", func(t *testing.T) {
		d := Host{Home: h.Home, Declared: map[string]string{"GOROOT": "/usr/local/go"}}
		f, why := Find(d, reached(t, filepath.Join(dir, "sdk/go1.22.0/bin/go")))
		if f == nil || len(f.Env) != 0 || len(f.Toolchain.Vars) != 0 {
			t.Fatalf("a declared GOROOT is the operator's: %+v, %s", f, why)
		}
	})
}

func TestJDK(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{
		"jvm/jdk-21/release":                 "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"21.0.2\"\n",
		"jvm/jdk-21/bin/java*":               "",
		"jvm/jdk8/release":                   "JAVA_VERSION=\"1.8.0_402\"\n",
		"jvm/jdk8/jre/bin/java*":             "",
		"jvm/noversion/release":              "IMPLEMENTOR=\"x\"\n",
		"jvm/noversion/bin/java*":            "",
		"bin/java -> ../jvm/jdk-21/bin/java": "",
	})
	h := Host{Home: filepath.Join(dir, "home")}
	w := want{kind: wire.ToolchainJDK, name: "21.0.2", root: "jvm/jdk-21", why: "release", env: map[string]string{"JAVA_HOME": "~/jvm/jdk-21"}}
	check(t, h, dir, "jvm/jdk-21/bin/java", w)
	check(t, h, dir, "bin/java", w)
	check(t, h, dir, "jvm/jdk8/jre/bin/java", want{kind: wire.ToolchainJDK, name: "1.8.0_402", root: "jvm/jdk8", why: "release",
		env: map[string]string{"JAVA_HOME": "~/jvm/jdk8"}})
	none(t, h, dir, "jvm/noversion/bin/java", "not in a known toolchain layout")
}

// A program in no layout is left as it is today.
func TestUnknown(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, map[string]string{"bin/tool*": ""})
	none(t, Host{Home: dir}, dir, "bin/tool", "not in a known toolchain layout")
	if f, why := Find(Host{}, nil); f != nil || why == "" {
		t.Fatalf("no paths: %+v %q", f, why)
	}
}

// TestPlaceResolvesSymlinks: a default place is found at its canonical
// path when the home, the place or a directory on the way to it is a
// symlink, and not found when it is a file or missing.
func TestPlaceResolvesSymlinks(t *testing.T) {
	dir := canon(t, t.TempDir())
	build(t, dir, map[string]string{
		"real-home/":                     "",
		"home -> real-home":              "",
		"real-home/.pyenv -> ../pyenv":   "",
		"pyenv/":                         "",
		"real-home/.config -> ../config": "",
		"config/nvm/":                    "",
		"real-home/.rustup":              "a file",
		"real-home/.volta -> ../nowhere": "",
		"real-home/.local/share/mise/":   "",
	})
	h := Host{Home: filepath.Join(dir, "home")}
	for _, c := range []struct{ name, want string }{
		{"PYENV_ROOT", filepath.Join(dir, "pyenv")},
		{"NVM_DIR", filepath.Join(dir, "config", "nvm")},
		{"MISE_DATA_DIR", filepath.Join(dir, "real-home", ".local", "share", "mise")},
		{"RUSTUP_HOME", ""},
		{"VOLTA_HOME", ""},
		{"SDKMAN_DIR", ""},
	} {
		defaults := map[string][]string{"PYENV_ROOT": {".pyenv"}, "NVM_DIR": {".nvm", ".config/nvm"}, "MISE_DATA_DIR": {".local/share/mise"},
			"RUSTUP_HOME": {".rustup"}, "VOLTA_HOME": {".volta"}, "SDKMAN_DIR": {".sdkman"}}[c.name]
		if got, _ := h.place(c.name, defaults...); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
