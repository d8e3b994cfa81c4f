package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// envOf returns the value of name in id's environment.
func envOf(id *wire.CommandIdentity, name string) string {
	for _, kv := range id.Env {
		if kv.Name == name {
			return kv.Value
		}
	}
	return ""
}

// TestCachePerWorkspaceInPolicyAndCard: every action of a workspace gets
// the same cache, a pinned read-write path of its policy under
// <state>/caches with GOCACHE and the others pointed into it; another
// workspace gets another; the card says the cache is kept and shared.
func TestCachePerWorkspaceInPolicyAndCard(t *testing.T) {
	r := newRig(t)
	a, b := r.resolved().Identity(), r.resolved().Identity()
	if len(a.Policy.ReadWrite) != 1 || !slices.Equal(a.Policy.ReadWrite, b.Policy.ReadWrite) {
		t.Fatalf("two actions of one workspace: read-write %q and %q", a.Policy.ReadWrite, b.Policy.ReadWrite)
	}
	cache := a.Policy.ReadWrite[0]
	real, err := filepath.EvalSymlinks(filepath.Join(r.state, "caches"))
	must(t, err)
	if !strings.HasPrefix(cache, real+"/") {
		t.Fatalf("the cache %s is not under %s", cache, real)
	}
	if _, ok := a.Policy.Pin(cache); !ok {
		t.Fatalf("the cache %s is not pinned", cache)
	}
	for _, n := range []string{"GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME", "npm_config_cache", "PIP_CACHE_DIR"} {
		if v := envOf(a, n); !strings.HasPrefix(v, cache+"/") {
			t.Errorf("%s=%q, not in the cache %s", n, v, cache)
		}
	}
	if envOf(a, "CARGO_TARGET_DIR") != "" {
		t.Error("CARGO_TARGET_DIR is set though the operator did not ask")
	}
	other := filepath.Join(filepath.Dir(r.workspace), "other")
	must(t, os.MkdirAll(filepath.Join(other, "sub"), 0o755))
	res, err := r.resolveIn(other, r.request())
	must(t, err)
	if got := res.Identity().Policy.ReadWrite; slices.Equal(got, a.Policy.ReadWrite) {
		t.Fatalf("another workspace shares the cache %q", got)
	}
	v := r.wantApproval(r.request())
	if !strings.Contains(v.Limitations, "Persistent cache: "+cache) || !strings.Contains(v.Limitations, "shared by every action of this workspace") {
		t.Fatalf("the card does not describe the cache:\n%s", v.Limitations)
	}
}

// TestCacheWorkspaceInsideCachesRefused: a cache is inside the state
// directory, so a workspace there is refused like any other place of the
// broker's (PATH_INVALID), before a cache is made for it.
func TestCacheWorkspaceInsideCachesRefused(t *testing.T) {
	r := newRig(t)
	cache := r.resolved().Identity().Policy.ReadWrite[0]
	must(t, os.Mkdir(filepath.Join(cache, "sub"), 0o700))
	_, err := r.resolveIn(cache, r.request())
	wantCode(t, err, wire.CodePathInvalid)
	if !strings.Contains(err.Error(), "the broker's") {
		t.Fatalf("refused, but not for the broker's places: %v", err)
	}
	list, err := ListCaches(r.state)
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("caches after the refusal: %+v", list)
	}
}

// TestCacheCargoTargetWhenAsked: --cargo-target-cache adds
// CARGO_TARGET_DIR in the cache.
func TestCacheCargoTargetWhenAsked(t *testing.T) {
	r := newRig(t, func(c *Config) { c.CargoTargetCache = true })
	id := r.resolved().Identity()
	if v := envOf(id, "CARGO_TARGET_DIR"); v != id.Policy.ReadWrite[0]+"/cargo-target" {
		t.Fatalf("CARGO_TARGET_DIR=%q", v)
	}
}

// TestCachePruneNeedsTheStateDirectory: ListCaches works beside a running
// broker; PruneCaches refuses while one holds the state lock, and removes
// the caches once none does.
func TestCachePruneNeedsTheStateDirectory(t *testing.T) {
	r := newRig(t)
	cache := r.resolved().Identity().Policy.ReadWrite[0]
	must(t, os.WriteFile(filepath.Join(cache, "go-build", "entry"), []byte("built"), 0o600))
	list, err := ListCaches(r.state)
	must(t, err)
	if len(list) != 1 || list[0].Dir != cache || list[0].Workspace != r.workspace || list[0].Bytes != 5 {
		t.Fatalf("list %+v", list)
	}
	if _, err := PruneCaches(r.state, time.Now(), true); err == nil || !strings.Contains(err.Error(), "stop `broker serve` first") {
		t.Fatalf("prune beside a running broker: %v", err)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("the refused prune removed the cache: %v", err)
	}
	state := filepath.Join(t.TempDir(), "state")
	b, err := Open(context.Background(), Config{StateDir: state})
	must(t, err)
	ws := wire.DirIdentity{Path: "/w", Dev: 1, Ino: 2}
	c, err := b.admit.Caches.For(ws)
	must(t, err)
	must(t, b.Close())
	if gone, err := PruneCaches(state, time.Now().Add(-time.Hour), false); err != nil || len(gone) != 0 {
		t.Fatalf("prune of caches used within the hour, older than an hour: %+v, %v", gone, err)
	}
	gone, err := PruneCaches(state, time.Now().Add(time.Minute), false)
	if err != nil || len(gone) != 1 {
		t.Fatalf("prune: %+v, %v", gone, err)
	}
	if _, err := os.Stat(filepath.Dir(c.Dir)); !os.IsNotExist(err) {
		t.Fatalf("the pruned cache is still there: %v", err)
	}
}

// TestCacheProgramIsNotAnExecutable: a program a target built into the
// cache (CARGO_TARGET_DIR) is refused as an action's executable: its
// directory is inside the state directory, which no action is granted.
func TestCacheProgramIsNotAnExecutable(t *testing.T) {
	r := newRig(t, func(c *Config) { c.CargoTargetCache = true })
	built := filepath.Join(envOf(r.resolved().Identity(), "CARGO_TARGET_DIR"), "app")
	copyFile(t, "/bin/true", built)
	req := r.request()
	req.Executable = built
	_, err := r.resolveReq(req)
	wantCode(t, err, wire.CodePathInvalid)
	if !strings.Contains(err.Error(), "inside the broker's state directory") {
		t.Fatalf("refused for another reason: %v", err)
	}
}
