package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/broker/internal/policy"
	"warrant/wire"
)

// The alias scan counts names found in the workspace's cache as inside
// the writable scope, so the cache it scans must be the pinned one: a
// directory put in its place, or a symlink there, is refused with
// WORKSPACE_ALIASED before any scan.
func TestOpenReadWriteChecksThePin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	must(t, os.Mkdir(dir, 0o700))
	pol, err := policy.WithReadWrite(wire.Policy{}, dir)
	must(t, err)
	fs, err := openReadWrite(&pol)
	if err != nil || len(fs) != 1 {
		t.Fatalf("the pinned cache: %v, %v", fs, err)
	}
	closeAll(fs)

	must(t, os.Rename(dir, dir+".old"))
	must(t, os.Mkdir(dir, 0o700))
	_, err = openReadWrite(&pol)
	wantCode(t, err, wire.CodeWorkspaceAliased)
	if !strings.Contains(err.Error(), "not the directory the policy pinned") {
		t.Fatalf("another directory in the cache's place: %v", err)
	}
	must(t, os.Remove(dir))
	must(t, os.Symlink(dir+".old", dir))
	_, err = openReadWrite(&pol)
	wantCode(t, err, wire.CodeWorkspaceAliased)
}
