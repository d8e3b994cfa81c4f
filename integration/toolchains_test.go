//go:build linux

package integration

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"warrant/wire"
)

// Toolchain discovery (issue 32 §3): programs of rustup, pyenv, a JDK and
// a Go root run unchanged through `broker run --approve` with nothing
// declared by hand — no --env, no <state>/env, no --read-path — as root
// against broker serve and as uid 65534 with its embedded broker, and the
// approval card names the toolchain and says its root is read-only.

const rustStable = "stable-x86_64-unknown-linux-gnu"

// tcRun is one `broker run --approve` (not --json: the card is printed
// on stderr for the record) and what it printed.
type tcRun struct {
	stdout, stderr string
	code           int
}

// tcRunner runs `broker run --approve --workspace WS --cwd CWD --profile
// P -- argv...` as a root or uid 65534 operator would.
type tcRunner struct {
	ws   string
	home string // whose toolchains discovery finds: root's, or uid 65534's fixture home
	cmd  func(args ...string) *exec.Cmd
}

func (r *tcRunner) run(t *testing.T, p wire.Profile, cwd string, argv ...string) tcRun {
	t.Helper()
	cmd := r.cmd(append([]string{"run", "--approve", "--workspace", r.ws, "--cwd", cwd, "--profile", p.String(), "--"}, argv...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return tcRun{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// ok runs argv and requires exit 0.
func (r *tcRunner) ok(t *testing.T, p wire.Profile, cwd string, argv ...string) tcRun {
	t.Helper()
	res := r.run(t, p, cwd, argv...)
	if res.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), res.code, tail(res.stdout), tail(res.stderr))
	}
	return res
}

// card requires the card on res's stderr to name the toolchain.
func card(t *testing.T, res tcRun, want string) {
	t.Helper()
	line := "  toolchain    " + want
	// A row the card wrapped continues under its value's column.
	unwrapped := strings.ReplaceAll(res.stderr, "\n"+strings.Repeat(" ", len("  toolchain    ")), " ")
	for l := range strings.Lines(unwrapped) {
		if strings.HasPrefix(l, line) {
			t.Logf("card: %s", strings.TrimSpace(l))
			return
		}
	}
	t.Errorf("the card does not say %q:\n%s", line, res.stderr)
}

// rootRunner is root's broker serve with no flag and no <state>/env.
func rootRunner(t *testing.T) *tcRunner {
	d := startOperatorBroker(t)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("skip: root has no home directory: %v", err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return &tcRunner{ws: ws, home: home, cmd: func(args ...string) *exec.Cmd {
		at := len(args)
		for i, a := range args {
			if a == "--" {
				at = i
				break
			}
		}
		args = append(append(append([]string{}, args[:at]...), "--state", d.State), args[at:]...)
		return exec.Command(bins.broker, args...)
	}}
}

// userRunner is uid 65534's embedded broker in its own home.
func userRunner(t *testing.T) (*tcRunner, *userBroker) {
	u := asNobody(t)
	return &tcRunner{ws: u.ws, home: u.home, cmd: func(args ...string) *exec.Cmd {
		return u.command(filepath.Join(u.bin, "broker"), args...)
	}}, u
}

// hostOut is a program's combined output on the host.
func hostOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Skipf("skip: %s %s fails on the host: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// need skips unless p is installed.
func need(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skip: %s is not installed on this host: %v", p, err)
	}
}

// cargoNewBuild: `cargo new --vcs none hello` and `cargo build` in it
// through rustup's cargo proxy (profile standard), `rustc --version`
// through the rustc proxy; the built program runs on the host.
func cargoNewBuild(t *testing.T, r *tcRunner, cargoHome string) {
	cargo, rustc := filepath.Join(cargoHome, "bin", "cargo"), filepath.Join(cargoHome, "bin", "rustc")
	rustupHome, err := filepath.EvalSymlinks(filepath.Join(r.home, ".rustup"))
	if err != nil {
		t.Fatal(err)
	}
	want := "rustup " + rustStable + " at " + rustupHome + ", read-only"
	res := r.ok(t, wire.ProfileStandard, ".", cargo, "new", "--vcs", "none", "hello")
	card(t, res, want)
	res = r.ok(t, wire.ProfileStandard, "hello", cargo, "build")
	card(t, res, want)
	bin := filepath.Join(r.ws, "hello", "target", "debug", "hello")
	if out := hostOut(t, bin); out != "Hello, world!\n" {
		t.Fatalf("host: the built %s printed %q", bin, out)
	}
	v := r.ok(t, wire.ProfileShort, ".", rustc, "--version")
	card(t, v, want)
	host := hostOut(t, filepath.Join(rustupHome, "toolchains", rustStable, "bin", "rustc"), "--version")
	if v.stdout != host {
		t.Fatalf("rustc --version said %q, the toolchain's rustc %q", v.stdout, host)
	}
}

// pyenvShim: the pyenv shim python3 runs the global version's
// interpreter; what it prints is that version's prefix.
func pyenvShim(t *testing.T, r *tcRunner, version string) {
	root, err := filepath.EvalSymlinks(filepath.Join(r.home, ".pyenv"))
	if err != nil {
		t.Fatal(err)
	}
	res := r.ok(t, wire.ProfileStandard, ".", filepath.Join(root, "shims", "python3"), "-c", "import sys; print(sys.prefix, sys.version_info[0])")
	card(t, res, "pyenv "+version+" at "+root+", read-only")
	if want := filepath.Join(root, "versions", version) + " 3\n"; res.stdout != want {
		t.Fatalf("the shim's python printed %q, want %q", res.stdout, want)
	}
}

// pyenvReadOnly: the pyenv root is read-only for the target: its write
// of the global version file fails, and the host's file keeps its bytes
// and its modification time.
func pyenvReadOnly(t *testing.T, r *tcRunner) {
	vf := filepath.Join(r.home, ".pyenv", "version")
	b, err := os.ReadFile(vf)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.Lstat(vf)
	res := r.run(t, wire.ProfileShort, ".", filepath.Join(r.home, ".pyenv", "shims", "python3"), "-c",
		"open('"+vf+"', 'w').write('2.7.18\\n')")
	after, _ := os.Lstat(vf)
	now, _ := os.ReadFile(vf)
	if res.code == 0 || !bytes.Equal(now, b) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("a write into the pyenv root: exit %d, host file now %q (was %q)\n%s", res.code, now, b, res.stderr)
	}
	if !strings.Contains(res.stderr, "PermissionError") {
		t.Errorf("the write failed otherwise than with EACCES:\n%s", res.stderr)
	}
}

// javaGo: `java -version` and `go version` print what they print on the
// host, and the card names the JDK and the Go root.
func javaGo(t *testing.T, r *tcRunner) {
	t.Run("java", func(t *testing.T) {
		need(t, "/usr/bin/java")
		real, _ := filepath.EvalSymlinks("/usr/bin/java")
		jdk := filepath.Dir(filepath.Dir(real))
		res := r.ok(t, wire.ProfileStandard, ".", "/usr/bin/java", "-version")
		host := hostOut(t, "/usr/bin/java", "-version")
		if first := strings.SplitN(host, "\n", 2)[0]; !strings.Contains(res.stderr, first) {
			t.Fatalf("java -version did not say %q:\n%s", first, res.stderr)
		}
		card(t, res, "jdk ")
		if !strings.Contains(res.stderr, " at "+jdk+", read-only") || !strings.Contains(res.stderr, `JAVA_HOME="`+jdk+`"`) {
			t.Errorf("the card does not name the JDK %s and the JAVA_HOME it sets", jdk)
		}
	})
	t.Run("go", func(t *testing.T) {
		need(t, "/usr/local/go/bin/go")
		res := r.ok(t, wire.ProfileStandard, ".", "/usr/local/go/bin/go", "version")
		if host := hostOut(t, "/usr/local/go/bin/go", "version"); res.stdout != host {
			t.Fatalf("go version said %q, the host's %q", res.stdout, host)
		}
		version, _ := os.ReadFile("/usr/local/go/VERSION")
		card(t, res, "go "+strings.SplitN(string(version), "\n", 2)[0]+" at /usr/local/go, read-only")
		if !strings.Contains(res.stderr, `GOROOT="/usr/local/go"`) {
			t.Errorf("the card's environment does not show the GOROOT the toolchain sets:\n%s", res.stderr)
		}
	})
}

// TestToolchainsAsRoot: root's rustup, pyenv, JDK and Go, each found
// where it lies, with nothing declared; the toolchain's root is granted
// read-only: a write into it from the target fails and the host file is
// unchanged.
func TestToolchainsAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: the host's toolchains are root's on this machine")
	}
	r := rootRunner(t)
	t.Run("rustup", func(t *testing.T) {
		need(t, filepath.Join(r.home, ".cargo", "bin", "rustup"))
		need(t, filepath.Join(r.home, ".rustup", "toolchains", rustStable))
		cargoNewBuild(t, r, filepath.Join(r.home, ".cargo"))
	})
	t.Run("pyenv", func(t *testing.T) {
		need(t, filepath.Join(r.home, ".pyenv", "shims", "python3"))
		b, err := os.ReadFile(filepath.Join(r.home, ".pyenv", "version"))
		if err != nil {
			t.Skipf("skip: pyenv has no global version file: %v", err)
		}
		pyenvShim(t, r, strings.Fields(string(b))[0])
		pyenvReadOnly(t, r)
	})
	javaGo(t, r)
}

// TestToolchainsAsUser: uid 65534's own rustup and pyenv (a fixture home
// holding rustup's binary and the stable toolchain, pyenv's libexec and
// one version: hard links of root's files, which uid 65534 can read but
// not reach under /root, which is 0700), the host's JDK and Go.
func TestToolchainsAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: needs root to switch to uid 65534")
	}
	r, u := userRunner(t)
	t.Run("rustup", func(t *testing.T) {
		need(t, "/root/.cargo/bin/rustup")
		need(t, filepath.Join("/root/.rustup/toolchains", rustStable))
		cargoHome := filepath.Join(u.home, ".cargo")
		linkTree(t, "/root/.cargo/bin/rustup", filepath.Join(cargoHome, "bin", "rustup"), nil)
		for _, p := range []string{"cargo", "rustc"} {
			if err := os.Symlink("rustup", filepath.Join(cargoHome, "bin", p)); err != nil {
				t.Fatal(err)
			}
		}
		rh := filepath.Join(u.home, ".rustup")
		linkTree(t, filepath.Join("/root/.rustup/toolchains", rustStable), filepath.Join(rh, "toolchains", rustStable),
			func(rel string) bool { return rel == "share/doc" })
		writeTree(t, rh, map[string]string{"settings.toml": "version = \"12\"\ndefault_toolchain = \"" + rustStable + "\"\n"})
		for _, d := range []string{"downloads", "tmp", "update-hashes"} { // rustup makes them at install; a proxy needs them
			if err := os.Mkdir(filepath.Join(rh, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		ownNew(t, cargoHome)
		ownNew(t, rh)
		cargoNewBuild(t, r, cargoHome)
	})
	t.Run("pyenv", func(t *testing.T) {
		const version = "3.11.7"
		need(t, filepath.Join("/root/.pyenv/versions", version, "bin", "python3"))
		root := filepath.Join(u.home, ".pyenv")
		linkTree(t, "/root/.pyenv/libexec", filepath.Join(root, "libexec"), nil)
		linkTree(t, "/root/.pyenv/pyenv.d", filepath.Join(root, "pyenv.d"), nil)
		linkTree(t, filepath.Join("/root/.pyenv/versions", version), filepath.Join(root, "versions", version), func(rel string) bool {
			b := filepath.Base(rel)
			return b == "test" || b == "tests" || b == "__pycache__" || b == "idlelib" || b == "tkinter"
		})
		// The shim as `pyenv rehash` writes it, for this root.
		writeTree(t, root, map[string]string{
			"version": version + "\n",
			"shims/python3*": "#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\nprogram=\"${0##*/}\"\n\n" +
				"export PYENV_ROOT=\"" + root + "\"\nexec \"" + root + "/libexec/pyenv\" exec \"$program\" \"$@\"\n",
		})
		ownNew(t, root)
		pyenvShim(t, r, version)
		pyenvReadOnly(t, r)
	})
	javaGo(t, r)
}

// ownNew gives uid 65534 what a fixture made under dir (directories,
// symlinks, files written there) but the hard links of root's files, so
// that the fixture is as writable by that uid as its own install would
// be, and only the sandbox keeps it read-only.
func ownNew(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil || st.Nlink != 1 {
				return err // a hard link of root's: its inode is root's file
			}
		}
		return os.Lchown(p, nobody, nobody)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// linkTree makes dst a copy of the tree src whose directories are new
// (root's, 0755) and whose files are hard links of src's (same owner and
// mode: readable, not writable, by uid 65534); skip leaves a directory
// out by its path relative to src. Nothing under dst may be chowned
// afterwards: the inodes are src's.
func linkTree(t *testing.T, src, dst string, skip func(rel string) bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && skip != nil && rel != "." && skip(rel):
			return filepath.SkipDir
		case d.IsDir():
			return os.Mkdir(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		default:
			return os.Link(p, to)
		}
	})
	if err != nil {
		t.Skipf("skip: cannot make uid 65534's copy of %s by hard links (%v); the toolchain under /root is not readable by that uid", src, err)
	}
}
