package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configured read path that covers the broker's own state directory
// stops the broker at Open, before anything runs (policy.CheckReadPaths):
// every action could otherwise read its signing keys. One beside it
// opens.
func TestOpenRefusesAReadPathOverItsKeys(t *testing.T) {
	dir := t.TempDir()
	state, tools := filepath.Join(dir, "state"), filepath.Join(dir, "tools")
	must(t, os.MkdirAll(tools, 0o755))
	for _, p := range []string{dir, state, "/proc"} {
		_, err := Open(context.Background(), Config{StateDir: state, ExtraReadPaths: []string{p}})
		if err == nil || !strings.Contains(err.Error(), "configured read path "+p+" ") || !strings.Contains(err.Error(), "which no action may read") {
			t.Errorf("read path %s: %v", p, err)
		}
	}
	b, err := Open(context.Background(), Config{StateDir: state, ExtraReadPaths: []string{tools}})
	if err != nil {
		t.Fatalf("read path %s: %v", tools, err)
	}
	b.Close()
}
