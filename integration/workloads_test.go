//go:build linux

package integration

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// The workload suite (issue 14 §5): an agent's real day — Go, C, Node,
// npm, Python, git, make, tar, java, cargo — run unchanged through the
// whole chain (`broker run --approve --json`: submit, approval, launcher,
// result, signed receipt), each artefact checked from the host: the built
// binary read back and run, the output file, the git object. Fixtures are
// written or built by the test, never downloaded; nothing needs the
// network. TestWorkloads runs them as root against broker serve;
// TestWorkloadsAsUser runs the core set as uid 65534 with its embedded
// broker.

// workbench is where a workload runs: a fresh workspace and the chain that
// runs commands in it, as root against broker serve or as uid 65534.
type workbench struct {
	WS   string
	User bool // uid 65534's embedded broker
	// run is `broker run --approve --json --profile p -- argv...` in WS;
	// it returns the decoded object and broker run's exit status.
	run func(p wire.Profile, argv ...string) (*runJSON, int)
	// shown is `broker receipts show ID --json`, decoded.
	shown func(id string) map[string]any
	// ready makes the fixtures written since the workbench was made usable
	// by the target's uid.
	ready func()
}

// rootBench is a fresh workspace of an agent of d (the shared daemon
// unless the workload needs the operator's flags).
func rootBench(t *testing.T, d *brokerd) *workbench {
	a := d.newAgent(t)
	return &workbench{
		WS: a.WS,
		run: func(p wire.Profile, argv ...string) (*runJSON, int) {
			_, j, code := a.run(p, argv...)
			return j, code
		},
		shown: func(id string) map[string]any {
			out, code := d.CLI("receipts", "show", id, "--json")
			return decodeShown(t, id, []byte(out), code)
		},
		ready: func() {},
	}
}

// userBench is uid 65534's workspace under its own home.
func userBench(t *testing.T) *workbench {
	u := asNobody(t)
	return &workbench{
		WS: u.ws, User: true,
		run: u.runProfile,
		shown: func(id string) map[string]any {
			out, code := u.cli("receipts", "show", id, "--json")
			return decodeShown(t, id, out, code)
		},
		ready: u.chownHome,
	}
}

func decodeShown(t *testing.T, id string, out []byte, code int) map[string]any {
	t.Helper()
	var shown map[string]any
	if err := json.Unmarshal(out, &shown); err != nil || code != 0 {
		t.Fatalf("broker receipts show %s: exit %d, %v\n%s", id, code, err, out)
	}
	return shown
}

// step runs argv through the chain and requires it to exit 0 with a
// receipt that verifies; it logs how long it took and the receipt's
// binding, and returns the result and the duration.
func (w *workbench) step(t *testing.T, p wire.Profile, argv ...string) (*runJSON, time.Duration) {
	t.Helper()
	start := time.Now()
	j, code := w.run(p, argv...)
	took := time.Since(start)
	cmdline := strings.Join(argv, " ")
	if code != 0 || j.Outcome != "exited" || j.ExitCode == nil || *j.ExitCode != 0 {
		exit := "none"
		if j.ExitCode != nil {
			exit = fmt.Sprint(*j.ExitCode)
		}
		t.Fatalf("%s: broker run exit %d, outcome %q, target exit %s, error %+v\nstdout:\n%s\nstderr:\n%s",
			cmdline, code, j.Outcome, exit, j.Error, tail(j.Stdout.Text), tail(j.Stderr.Text))
	}
	binding := "?"
	if j.ReceiptID == nil {
		t.Fatalf("%s: exited without a receipt", cmdline)
	}
	shown := w.shown(*j.ReceiptID)
	if v, _ := shown["verified"].(bool); !v {
		t.Fatalf("%s: receipt %s does not verify: %v", cmdline, *j.ReceiptID, shown["problems"])
	}
	if rc, ok := shown["receipt"].(map[string]any); ok {
		if sb, ok := rc["sandbox"].(map[string]any); ok && sb["binding"] != nil {
			binding = fmt.Sprint(sb["binding"])
		}
	}
	extra := ""
	if n := len(j.ProtectedChanges); n > 0 {
		extra = fmt.Sprintf(", %d protected-path change(s) detected", n)
	}
	t.Logf("%s: exit 0 in %s (binding %s%s)", cmdline, took.Round(time.Millisecond), binding, extra)
	return j, took
}

// tail is the end of a stream, enough to read a failure.
func tail(s string) string {
	const n = 4000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// workload is one entry of the suite; core ones run as uid 65534 too;
// own ones start the broker they need and get no workbench.
type workload struct {
	name      string
	core, own bool
	run       func(t *testing.T, w *workbench)
}

var workloads = []workload{
	{"go-build", true, false, goBuild},
	{"go-test-cached", true, false, goTestCached},
	{"go-vet", true, false, goVet},
	{"go-test-binary-reexec", false, false, goReexec},
	{"c-origin-rpath-outside", false, false, func(t *testing.T, w *workbench) { cOrigin(t, w, false) }},
	{"c-origin-rpath-in-workspace", false, false, func(t *testing.T, w *workbench) { cOrigin(t, w, true) }},
	{"node-require", false, false, nodeRequire},
	{"node-script-require", false, false, nodeScript},
	{"npm-test", false, false, npmTest},
	{"node-test-reexec", true, false, nodeTest},
	{"c-proc-self-exe-reexec", true, false, cReexec},
	{"python-venv-unittest", true, false, pythonVenv},
	{"git-init-add-commit", true, false, gitCommit},
	{"make", true, false, makeFile},
	{"tar-round-trip", false, false, tarRoundTrip},
	{"java-version", false, false, javaVersion},
	{"cargo-build-offline", false, false, cargoBuild},
}

// TestWorkloads runs every workload as root through broker serve, each in
// a subtest and a workspace of its own.
func TestWorkloads(t *testing.T) {
	for _, wl := range workloads {
		t.Run(wl.name, func(t *testing.T) {
			if wl.own {
				wl.run(t, nil)
				return
			}
			wl.run(t, rootBench(t, shared(t)))
		})
	}
}

// TestWorkloadsAsUser runs the core set (Go, the Python venv, git, make)
// as uid 65534 with its embedded broker, fixtures owned by that user.
func TestWorkloadsAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: needs root to switch to uid 65534")
	}
	for _, wl := range workloads {
		if wl.core {
			t.Run(wl.name, func(t *testing.T) { wl.run(t, userBench(t)) })
		}
	}
}

// noTelemetryChild checks the go command's stderr for the line every go
// command printed in the sandbox before the action's HOME said telemetry
// is off (broker.makeSet): its telemetry child starts with setsid, which
// the launcher's seccomp filter denies.
func noTelemetryChild(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "can't start telemetry child process") {
		t.Errorf("the go command tried to start its telemetry child:\n%s", stderr)
	}
}

// goBuild: `go build .` of a small module; the binary is on the host and
// runs. The go command finds GOROOT from its own location
// (os.Executable()).
func goBuild(t *testing.T, w *workbench) {
	gotool := goTool(t)
	goModuleFixture(t, w.WS)
	w.ready()
	j, _ := w.step(t, wire.ProfileLong, gotool, "build", ".")
	noTelemetryChild(t, j.Stderr.Text)
	bin := filepath.Join(w.WS, "workload")
	if out := hostRun(t, "/", nil, bin); out != "hello, workload\n" {
		t.Fatalf("host: the built %s printed %q", bin, out)
	}
}

// goTestCached: `go test ./...` twice; the second run is served from the
// workspace's build cache and says so.
func goTestCached(t *testing.T, w *workbench) {
	gotool := goTool(t)
	goModuleFixture(t, w.WS)
	w.ready()
	first, d1 := w.step(t, wire.ProfileLong, gotool, "test", "./...")
	if !strings.Contains(first.Stdout.Text, "ok  \texample.com/workload") {
		t.Fatalf("first go test: no ok line:\n%s", first.Stdout.Text)
	}
	noTelemetryChild(t, first.Stderr.Text)
	second, d2 := w.step(t, wire.ProfileLong, gotool, "test", "./...")
	t.Logf("go test ./...: first %s, second %s", d1.Round(time.Millisecond), d2.Round(time.Millisecond))
	if !strings.Contains(second.Stdout.Text, "(cached)") {
		t.Fatalf("the second go test did not hit the cache:\n%s", second.Stdout.Text)
	}
}

// goVet: `go vet ./...` of the module is clean.
func goVet(t *testing.T, w *workbench) {
	gotool := goTool(t)
	goModuleFixture(t, w.WS)
	w.ready()
	j, _ := w.step(t, wire.ProfileLong, gotool, "vet", "./...")
	noTelemetryChild(t, j.Stderr.Text)
	if s := strings.TrimSpace(j.Stdout.Text + j.Stderr.Text); s != "" {
		t.Fatalf("go vet printed:\n%s", s)
	}
}

// goReexec: a test binary built on the host re-executes itself through
// os.Executable(), which names the installed file; the child's line
// carries the token and the same path.
func goReexec(t *testing.T, w *workbench) {
	gotool := goTool(t)
	bin := reexecFixture(t, gotool, filepath.Join(t.TempDir(), "bin"))
	w.ready()
	installed := realPath(t, bin)
	mark := token(t)
	j, _ := w.step(t, wire.ProfileStandard, bin, "-test.run=^TestParent$", "-token="+mark)
	for _, want := range []string{"parent exe=" + installed + "\n", "child token=" + mark + " exe=" + installed + "\n"} {
		if !strings.Contains(j.Stdout.Text, want) {
			t.Fatalf("the test binary's output lacks %q:\n%s", want, j.Stdout.Text)
		}
	}
}

// cOrigin: a C program finds libgreet.so in its own directory through
// RUNPATH $ORIGIN, built outside the workspace (the broker grants the
// executable's directory read+exec) or inside it; /proc/self/exe is the
// installed file.
func cOrigin(t *testing.T, w *workbench, inWorkspace bool) {
	dir := filepath.Join(t.TempDir(), "cbin")
	if inWorkspace {
		dir = filepath.Join(w.WS, "cbin")
	}
	exe := originFixture(t, dir)
	w.ready()
	j, _ := w.step(t, wire.ProfileShort, exe)
	if want := "hello from libgreet\nexe=" + realPath(t, exe) + "\n"; j.Stdout.Text != want {
		t.Fatalf("greet printed %q, want %q", j.Stdout.Text, want)
	}
}

// nodeRequire: `node main.js`: the script requires a sibling module.
func nodeRequire(t *testing.T, w *workbench) {
	node := lookPath(t, "node")
	nodeFixture(t, w.WS, node)
	w.ready()
	mark := token(t)
	j, _ := w.step(t, wire.ProfileShort, "node", "main.js", mark)
	if want := "hello from a sibling module, " + mark + "\n"; j.Stdout.Text != want {
		t.Fatalf("node main.js printed %q, want %q", j.Stdout.Text, want)
	}
	if got, want := readHost(t, filepath.Join(w.WS, "main.out")), filepath.Join(realPath(t, w.WS), "main.js")+"\n"; got != want {
		t.Fatalf("host: main.out is %q, want %q", got, want)
	}
}

// nodeScript: the script itself is the executable (#! node): node gets the
// script's real path, so its require of a sibling works and __filename is
// the file in the workspace.
func nodeScript(t *testing.T, w *workbench) {
	node := lookPath(t, "node")
	nodeFixture(t, w.WS, node)
	w.ready()
	mark := token(t)
	script := filepath.Join(w.WS, "main.js")
	j, _ := w.step(t, wire.ProfileShort, script, mark)
	if want := "hello from a sibling module, " + mark + "\n"; j.Stdout.Text != want {
		t.Fatalf("main.js printed %q, want %q", j.Stdout.Text, want)
	}
	if got, want := readHost(t, filepath.Join(w.WS, "main.out")), realPath(t, script)+"\n"; got != want {
		t.Fatalf("host: main.out is %q, want %q", got, want)
	}
}

// npmTest: `npm test` of a package with a test script and no
// dependencies; npm is itself a #! script that requires its siblings.
func npmTest(t *testing.T, w *workbench) {
	lookPath(t, "node")
	lookPath(t, "npm")
	mark := token(t)
	npmFixture(t, w.WS, mark)
	w.ready()
	j, _ := w.step(t, wire.ProfileStandard, "npm", "test")
	if !strings.Contains(j.Stdout.Text, "npm test passed") {
		t.Fatalf("npm test printed:\n%s", j.Stdout.Text)
	}
	if got := readHost(t, filepath.Join(w.WS, "npm-test.out")); got != "passed "+mark+"\n" {
		t.Fatalf("host: npm-test.out is %q", got)
	}
}

// pythonVenv: `python3 -m venv .venv` (pip included) in the workspace,
// then the venv's own `.venv/bin/python -m unittest`, which runs in the
// venv.
func pythonVenv(t *testing.T, w *workbench) {
	py := python(t)
	pythonFixture(t, w.WS)
	w.ready()
	w.step(t, wire.ProfileLong, py, "-m", "venv", ".venv")
	venv := filepath.Join(w.WS, ".venv")
	if cfg := readHost(t, filepath.Join(venv, "pyvenv.cfg")); !strings.Contains(cfg, "home = ") {
		t.Fatalf("host: .venv/pyvenv.cfg has no home:\n%s", cfg)
	}
	if _, err := os.Stat(filepath.Join(venv, "bin", "pip")); err != nil {
		t.Fatalf("host: the venv has no pip: %v", err)
	}
	if out := hostRun(t, w.WS, nil, filepath.Join(venv, "bin", "python"), "-c", "import sys; print(sys.prefix != sys.base_prefix)"); out != "True\n" {
		t.Fatalf("host: .venv/bin/python is not a venv's python: %q", out)
	}
	j, _ := w.step(t, wire.ProfileStandard, ".venv/bin/python", "-m", "unittest")
	if !strings.Contains(j.Stderr.Text, "Ran 1 test") || !strings.Contains(j.Stderr.Text, "\nOK") {
		t.Fatalf("unittest printed:\n%s", j.Stderr.Text)
	}
	if got := strings.TrimSpace(readHost(t, filepath.Join(w.WS, "unittest.out"))); realPath(t, got) != realPath(t, venv) {
		t.Fatalf("host: the test ran with sys.prefix %q, want %s", got, venv)
	}
}

// hostGit runs git on the host against the workspace, with no user
// configuration and any owner (uid 65534's repository included).
func hostGit(t *testing.T, ws string, args ...string) string {
	t.Helper()
	return hostRun(t, ws, []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null"},
		lookPath(t, "git"), append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...)
}

// gitCommit: `git init`, `git add`, `git commit`; the commit object is
// read back on the host.
func gitCommit(t *testing.T, w *workbench) {
	lookPath(t, "git")
	mark := token(t)
	writeTree(t, w.WS, map[string]string{"hello.txt": "hello " + mark + "\n"})
	w.ready()
	w.step(t, wire.ProfileShort, "git", "init", "-q", "-b", "main")
	w.step(t, wire.ProfileShort, "git", "add", "hello.txt")
	subject := "workload commit " + mark
	w.step(t, wire.ProfileShort, "git", "-c", "user.name=Workload", "-c", "user.email=workload@example.invalid",
		"commit", "-q", "-m", subject)
	if got := hostGit(t, w.WS, "log", "--format=%s <%ae>"); got != subject+" <workload@example.invalid>\n" {
		t.Fatalf("host: git log is %q", got)
	}
	if got := hostGit(t, w.WS, "cat-file", "-p", "HEAD:hello.txt"); got != "hello "+mark+"\n" {
		t.Fatalf("host: HEAD:hello.txt is %q", got)
	}
	if got := hostGit(t, w.WS, "fsck", "--strict", "--no-progress"); got != "" {
		t.Logf("host: git fsck: %s", got)
	}
}

// makeFile: `make` builds a file from a rule, then finds it up to date.
func makeFile(t *testing.T, w *workbench) {
	lookPath(t, "make")
	writeTree(t, w.WS, map[string]string{
		"Makefile": "out.txt: in.txt\n\ttr a-z A-Z < in.txt > $@\n",
		"in.txt":   "hello make\n",
	})
	w.ready()
	w.step(t, wire.ProfileShort, "make")
	if got := readHost(t, filepath.Join(w.WS, "out.txt")); got != "HELLO MAKE\n" {
		t.Fatalf("host: out.txt is %q", got)
	}
	j, _ := w.step(t, wire.ProfileShort, "make")
	if !strings.Contains(j.Stdout.Text, "is up to date") {
		t.Fatalf("the second make rebuilt: %q", j.Stdout.Text)
	}
}

// tarRoundTrip: `tar -cf` of a tree, the archive read on the host, then
// `tar -xf` into another directory, compared file by file.
func tarRoundTrip(t *testing.T, w *workbench) {
	lookPath(t, "tar")
	mark := token(t)
	tree := map[string]string{"src/a.txt": "alpha " + mark + "\n", "src/sub/b.txt": "beta\n", "src/run.sh*": "#!/bin/sh\necho run\n"}
	writeTree(t, w.WS, tree)
	if err := os.Mkdir(filepath.Join(w.WS, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.ready()
	w.step(t, wire.ProfileShort, "tar", "-cf", "src.tar", "src")
	f, err := os.Open(filepath.Join(w.WS, "src.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	archived := map[string]string{}
	for tr := tar.NewReader(f); ; {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("host: src.tar: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			archived[h.Name] = string(b)
		}
	}
	w.step(t, wire.ProfileShort, "tar", "-xf", "src.tar", "-C", "out")
	for name, body := range tree {
		isExec := strings.HasSuffix(name, "*")
		name = strings.TrimSuffix(name, "*")
		if archived[name] != body {
			t.Errorf("host: src.tar has %s = %q, want %q", name, archived[name], body)
		}
		p := filepath.Join(w.WS, "out", name)
		if got := readHost(t, p); got != body {
			t.Errorf("host: extracted %s is %q, want %q", name, got, body)
		}
		if st, err := os.Stat(p); err == nil && isExec && st.Mode()&0o111 == 0 {
			t.Errorf("host: extracted %s lost its execute bits: %v", name, st.Mode())
		}
	}
	if len(archived) != len(tree) {
		t.Errorf("host: src.tar holds %d files, want %d: %v", len(archived), len(tree), archived)
	}
}

// javaVersion: `java -version`; the launcher finds libjli.so through
// $ORIGIN. It prints what the host's java prints.
func javaVersion(t *testing.T, w *workbench) {
	const java = "/usr/bin/java"
	if _, err := os.Stat(java); err != nil {
		t.Skipf("skip: %s is not installed on the host: %v", java, err)
	}
	host := strings.SplitN(hostRun(t, "/", nil, java, "-version"), "\n", 2)[0]
	j, _ := w.step(t, wire.ProfileStandard, java, "-version")
	if got := strings.SplitN(j.Stderr.Text, "\n", 2)[0]; got != host {
		t.Fatalf("java -version said %q, the host's java %q\n%s", got, host, j.Stderr.Text)
	}
}

// cargoBuild: `cargo build --offline` of a crate with no dependencies
// through rustup's cargo proxy, with nothing declared by hand: the broker
// finds rustup's toolchain (broker/internal/toolchain); the built binary
// runs on the host.
func cargoBuild(t *testing.T, w *workbench) {
	home, _ := os.UserHomeDir()
	cargo := filepath.Join(home, ".cargo", "bin", "cargo")
	if _, err := os.Stat(cargo); err != nil {
		t.Skipf("skip: rustup's cargo is not installed at %s: %v", cargo, err)
	}
	if out, err := exec.Command(cargo, "--version").CombinedOutput(); err != nil {
		t.Skipf("skip: %s --version fails on the host, so rustup has no usable toolchain: %v\n%s", cargo, err, out)
	}
	cargoFixture(t, w.WS)
	w.step(t, wire.ProfileLong, cargo, "build", "--offline")
	bin := filepath.Join(w.WS, "target", "debug", "workload")
	if out := hostRun(t, "/", nil, bin); out != "hello from cargo\n" {
		t.Fatalf("host: the built %s printed %q", bin, out)
	}
}
