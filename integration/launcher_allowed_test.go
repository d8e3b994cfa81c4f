//go:build linux

package integration

import (
	"os"
	"strings"
	"testing"
)

func TestLauncherHelperWritesInWorkspace(t *testing.T) {
	a := newAction(t)
	r := a.Run(a.Helper("write", "out.txt", "hello from the target"))
	r.Ready(t)
	if r.Stdout != "ok\n" || r.State.ExitCode() != 0 {
		t.Fatalf("stdout %q exit %v stderr %q", r.Stdout, r.State, r.Stderr)
	}
	got, err := os.ReadFile(a.Path("out.txt"))
	if err != nil || string(got) != "hello from the target" {
		t.Fatalf("host read-back: %q, %v", got, err)
	}
}

func TestLauncherPython(t *testing.T) {
	a := newAction(t)
	r := a.Run(a.Request("python3", "-c", "import os; open('py.txt','w').write(str(6*7)); print(os.getcwd())"))
	r.Ready(t)
	if strings.TrimSpace(r.Stdout) != a.Workspace {
		t.Fatalf("stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	if got, _ := os.ReadFile(a.Path("py.txt")); string(got) != "42" {
		t.Fatalf("host read-back %q", got)
	}
}
