//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bins are the binaries under test, built once by TestMain.
var bins struct {
	dir      string
	launcher string // cmd/launcher, static
	helper   string // integration/testdata/helper, static
	broker   string // cmd/broker, static: the thin client under test
	brokerd  string // cmd/brokerd beside it, static: the daemon and the whole CLI
	gofloor  string // integration/testdata/gofloor, static: the smallest Go program
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "warrant-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins.dir = dir
	bins.launcher = filepath.Join(dir, "launcher")
	bins.helper = filepath.Join(dir, "helper")
	bins.broker = filepath.Join(dir, "broker")
	bins.brokerd = filepath.Join(dir, "brokerd")
	bins.gofloor = filepath.Join(dir, "gofloor")
	builds := []struct {
		out, pkg, cgo string
	}{
		{bins.launcher, "warrant/cmd/launcher", "0"}, // seccomp is precompiled: no cgo
		{bins.helper, "warrant/integration/testdata/helper", "0"},
		{bins.broker, "warrant/cmd/broker", "0"},
		{bins.brokerd, "warrant/cmd/brokerd", "0"},
		{bins.gofloor, "warrant/integration/testdata/gofloor", "0"},
	}
	for _, b := range builds {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: build %s: %v\n%s", b.pkg, err, out)
			return 1
		}
	}
	defer stopShared()
	return m.Run()
}
