//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// Programs that run themselves again (issue 32 §2): node --test spawns
// process.execPath for every test file, and any program may re-execute
// itself through /proc/self/exe or the path it reads there. Every
// executable runs in place by default, so both name the installed file.

// nodeTest: `node --test` of a workspace with one test file; node runs
// the file in a child it spawns from process.execPath. The test writes
// its mark into the workspace, read back on the host.
func nodeTest(t *testing.T, w *workbench) {
	node := lookPath(t, "node")
	mark := token(t)
	writeTree(t, w.WS, map[string]string{
		"test/add.test.js": "const mark = '" + mark + "';\n" + `const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
test('adds', () => {
  assert.strictEqual(1 + 2, 3);
  fs.writeFileSync('node-test.out', 'passed ' + mark + ' ' + process.execPath + '\n');
});
`,
	})
	w.ready()
	j, _ := w.step(t, wire.ProfileStandard, "node", "--test")
	if !strings.Contains(j.Stdout.Text, "# pass 1") || !strings.Contains(j.Stdout.Text, "# fail 0") {
		t.Fatalf("node --test printed:\n%s\n%s", j.Stdout.Text, j.Stderr.Text)
	}
	boundInPlace(t, w, j)
	got := readHost(t, filepath.Join(w.WS, "node-test.out"))
	if want := "passed " + mark + " " + realPath(t, node) + "\n"; got != want {
		t.Fatalf("host: node-test.out is %q, want %q (process.execPath the installed node)", got, want)
	}
}

// cReexec: a C program (not Go, no $ORIGIN) runs itself again twice: by
// the path /proc/self/exe names, as node does with process.execPath, and
// through /proc/self/exe itself. Both children print the installed path.
func cReexec(t *testing.T, w *workbench) {
	gcc := hostTool(t, "gcc")
	src := t.TempDir()
	writeTree(t, src, map[string]string{"reexec.c": `#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n < 0 ? 0 : n] = 0;
	if (argc > 1) {
		printf("child %s exe=%s\n", argv[1], exe);
		return 0;
	}
	printf("parent exe=%s\n", exe);
	fflush(stdout);
	const char *how[2] = {exe, "/proc/self/exe"};
	const char *tag[2] = {"by-path", "by-proc"};
	for (int i = 0; i < 2; i++) {
		pid_t p = fork();
		if (p == 0) {
			execl(how[i], how[i], tag[i], (char *)0);
			perror(how[i]);
			_exit(127);
		}
		int st;
		if (waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "%s failed\n", tag[i]);
			return 1;
		}
	}
	return 0;
}
`})
	exe := filepath.Join(w.WS, "bin", "reexec")
	writeTree(t, w.WS, map[string]string{"bin/.keep": ""})
	hostRun(t, src, nil, gcc, "-o", exe, "reexec.c")
	w.ready()
	j, _ := w.step(t, wire.ProfileShort, exe)
	boundInPlace(t, w, j)
	installed := realPath(t, exe)
	for _, want := range []string{"parent exe=" + installed + "\n", "child by-path exe=" + installed + "\n", "child by-proc exe=" + installed + "\n"} {
		if !strings.Contains(j.Stdout.Text, want) {
			t.Fatalf("reexec's output lacks %q:\n%s\n%s", want, j.Stdout.Text, j.Stderr.Text)
		}
	}
}

// boundInPlace requires j's receipt to say the executable ran in place,
// its bytes bound (by the broker's read lease, or by being unwritable by
// the broker's uid), not broken.
func boundInPlace(t *testing.T, w *workbench, j *runJSON) {
	t.Helper()
	rc, _ := w.shown(*j.ReceiptID)["receipt"].(map[string]any)
	sb, _ := rc["sandbox"].(map[string]any)
	if by := sb["boundBy"]; sb["binding"] != "in-place" || (by != "read-lease" && by != "unwritable") {
		t.Fatalf("the receipt's binding is %v bound by %v, want in-place bound by the read lease or unwritable", sb["binding"], by)
	}
}
