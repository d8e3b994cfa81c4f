//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// The workload suite's fixtures: every one is written or built on the
// host by the test itself, never downloaded.

// writeTree writes files (path relative to dir → content) under dir,
// mode 0644, creating the directories they need (0755). A path ending in
// "*" is written without the star and made executable (0755).
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
}

// hostRun runs name with args on the host in dir and returns its combined
// output; a failure is fatal.
func hostRun(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("host: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// readHost reads a file the target made, from the host.
func readHost(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("host: the workload's artefact: %v", err)
	}
	return string(b)
}

// realPath is p with every symlink resolved, as the kernel names it in
// /proc/self/exe.
func realPath(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// goTool is the Go toolchain the Go workloads use, or a skip.
func goTool(t testing.TB) string {
	t.Helper()
	const p = "/usr/local/go/bin/go"
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		t.Skipf("skip: %s is absent (%v); the Go workloads need it", p, err)
	}
	return p
}

// hostTool is name on the host's own PATH, or a skip.
func hostTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("skip: %s is not installed on the host (%v); the fixture is built with it", name, err)
	}
	return p
}

// goModuleFixture is a one-package module with a test, in ws.
func goModuleFixture(t testing.TB, ws string) {
	writeTree(t, ws, map[string]string{
		"go.mod": "module example.com/workload\n\ngo 1.22\n",
		"main.go": `package main

import "fmt"

func main() { fmt.Println(Greeting("workload")) }
`,
		"greet.go": `package main

// Greeting says hello to who.
func Greeting(who string) string { return "hello, " + who }
`,
		"greet_test.go": `package main

import "testing"

func TestGreeting(t *testing.T) {
	if got := Greeting("test"); got != "hello, test" {
		t.Fatalf("Greeting = %q", got)
	}
}
`,
	})
}

// reexecFixture builds, on the host with go test -c, a test binary whose
// TestParent re-executes the binary itself through os.Executable() to run
// TestChild, the helper-process pattern of Go tests. Both print the path
// os.Executable() gave them. It returns the binary's path, in dir.
func reexecFixture(t testing.TB, gotool, dir string) string {
	t.Helper()
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"go.mod": "module example.com/reexec\n\ngo 1.22\n",
		"reexec_test.go": `package reexec

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

var token = flag.String("token", "", "what the child prints")

func TestParent(t *testing.T) {
	if os.Getenv("REEXEC_CHILD") != "" {
		t.Skip("the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("parent exe=%s\n", exe)
	cmd := exec.Command(exe, "-test.run=^TestChild$", "-token="+*token)
	cmd.Env = append(os.Environ(), "REEXEC_CHILD=1")
	out, err := cmd.CombinedOutput()
	fmt.Printf("%s", out)
	if err != nil {
		t.Fatalf("re-exec of os.Executable() %s: %v", exe, err)
	}
}

func TestChild(t *testing.T) {
	if os.Getenv("REEXEC_CHILD") == "" {
		t.Skip("not the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("child token=%s exe=%s\n", *token, exe)
}
`,
	})
	bin := filepath.Join(dir, "reexec.test")
	hostRun(t, src, []string{"CGO_ENABLED=0"}, gotool, "test", "-c", "-o", bin, ".")
	return bin
}

// originFixture builds, on the host with gcc, libgreet.so and a program
// greet linked against it with RUNPATH $ORIGIN, both in dir. greet prints
// the library's greeting and the target of /proc/self/exe. It returns
// greet's path.
func originFixture(t testing.TB, dir string) string {
	t.Helper()
	gcc := hostTool(t, "gcc")
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"greet.c": `const char *greeting(void) { return "hello from libgreet"; }
`,
		"main.c": `#include <stdio.h>
#include <unistd.h>

const char *greeting(void);

int main(void) {
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		n = 0;
	exe[n] = 0;
	printf("%s\nexe=%s\n", greeting(), exe);
	return 0;
}
`,
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lib, exe := filepath.Join(dir, "libgreet.so"), filepath.Join(dir, "greet")
	hostRun(t, src, nil, gcc, "-shared", "-fPIC", "-o", lib, "greet.c")
	hostRun(t, src, nil, gcc, "-o", exe, "main.c", "-L"+dir, "-lgreet", "-Wl,-rpath,$ORIGIN")
	// The fixture itself is sound: it finds its library from another
	// directory, through $ORIGIN alone.
	if out := hostRun(t, "/", nil, exe); !strings.HasPrefix(out, "hello from libgreet\n") {
		t.Fatalf("host: %s printed %q", exe, out)
	}
	return exe
}

// nodeFixture is a script requiring a sibling module, in ws: main.js
// (executable, with the node interpreter in its #! line) prints the
// module's greeting and writes its own __filename to main.out.
func nodeFixture(t testing.TB, ws, node string) {
	writeTree(t, ws, map[string]string{
		"lib/greet.js": "module.exports = (who) => `hello from a sibling module, ${who}`;\n",
		"main.js*": "#!" + node + `
const fs = require('fs');
const greet = require('./lib/greet');
fs.writeFileSync('main.out', __filename + '\n');
console.log(greet(process.argv[2]));
`,
	})
}

// npmFixture is a package.json as npm init -y writes it, with a test
// script and no dependencies, in ws; the test writes npm-test.out.
func npmFixture(t testing.TB, ws, mark string) {
	pkg, err := json.MarshalIndent(map[string]any{
		"name": "workload", "version": "1.0.0", "description": "", "main": "index.js",
		"scripts":  map[string]string{"test": "node test.js " + mark},
		"keywords": []string{}, "author": "", "license": "ISC",
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, map[string]string{
		"package.json": string(pkg) + "\n",
		// No network: the update check would only wait for it.
		".npmrc":   "update-notifier=false\nfund=false\naudit=false\n",
		"index.js": "exports.add = (a, b) => a + b;\n",
		"test.js": `const assert = require('assert');
const fs = require('fs');
const { add } = require('./index');
assert.strictEqual(add(2, 3), 5);
fs.writeFileSync('npm-test.out', 'passed ' + process.argv[2] + '\n');
console.log('npm test passed');
`,
	})
}

// pythonFixture is a unittest module in ws whose test requires that it
// runs in the workspace's .venv and records sys.prefix in unittest.out.
func pythonFixture(t testing.TB, ws string) {
	writeTree(t, ws, map[string]string{
		"test_workload.py": `import os
import sys
import unittest


class TestVenv(unittest.TestCase):
    def test_in_the_venv(self):
        with open("unittest.out", "w") as f:
            f.write(sys.prefix + "\n")
        self.assertNotEqual(sys.prefix, sys.base_prefix)
        self.assertEqual(os.path.realpath(sys.prefix), os.path.realpath(os.path.join(os.getcwd(), ".venv")))
`,
	})
}

// cargoFixture is a crate with no dependencies, in ws.
func cargoFixture(t testing.TB, ws string) {
	writeTree(t, ws, map[string]string{
		"Cargo.toml":  "[package]\nname = \"workload\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
		"src/main.rs": "fn main() {\n    println!(\"hello from cargo\");\n}\n",
	})
}

// startOperatorBroker starts a `broker serve` of the test's own on a
// fresh state directory with the operator's flags (the toolchain
// environment of issue 14 §3, extra read paths), with the launcher
// TestMain built; the test's cleanup kills it.
func startOperatorBroker(t *testing.T, flags ...string) *brokerd {
	t.Helper()
	return serveWith(t, filepath.Join(t.TempDir(), "state"), nil, flags...)
}

// runProfile is runStatus under profile p.
func (u *userBroker) runProfile(p wire.Profile, argv ...string) (*runJSON, int) {
	u.t.Helper()
	out, code := u.cli(append([]string{"run", "--approve", "--json", "--write-hints", "--workspace", u.ws, "--profile", p.String(), "--"}, argv...)...)
	var res runJSON
	if err := json.Unmarshal(out, &res); err != nil {
		u.t.Fatalf("broker run as uid %d: exit %d, %v\n%s", nobody, code, err, out)
	}
	return &res, code
}

// cli runs `broker ARGS...` as uid 65534 with its state directory and
// returns its stdout and exit status.
func (u *userBroker) cli(args ...string) ([]byte, int) {
	u.t.Helper()
	cmd := u.command(filepath.Join(u.bin, "broker"), args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		u.t.Fatal(err)
	}
	if errb.Len() > 0 {
		u.t.Logf("broker %s as uid %d: stderr:\n%s", args[0], nobody, errb.String())
	}
	return out, cmd.ProcessState.ExitCode()
}
