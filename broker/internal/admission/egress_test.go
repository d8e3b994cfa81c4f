package admission

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/broker/internal/caches"
	"warrant/broker/internal/policy"
	"warrant/broker/internal/statedir"
	"warrant/wire"
)

// testResolver is a Resolver as a broker's Open makes it, on a state
// directory of its own, with presets.
func testResolver(t *testing.T, presets map[string][]string) *Resolver {
	t.Helper()
	dirs, err := statedir.Prepare(t.TempDir())
	must(t, err)
	protected, withheld, err := Authority(dirs, nil, nil)
	must(t, err)
	t.Cleanup(protected.Close)
	base, err := policy.Base(nil)
	must(t, err)
	store, err := caches.Open(dirs.Caches, false, time.Now)
	must(t, err)
	return &Resolver{Protected: protected, Withheld: withheld, Base: base, Env: ActionEnv(os.Environ(), nil),
		Caches: store, Presets: presets, Logf: t.Logf}
}

// TestResolveExpandsEgress: what a request asks for — entries in any
// accepted spelling and preset names — becomes the identity's exact
// list, canonical, sorted, each once; the fingerprint covers it, and an
// ask that names no preset is refused before anything is measured.
func TestResolveExpandsEgress(t *testing.T) {
	r := testResolver(t, map[string][]string{
		"npm": {"registry.npmjs.org:443"},
		"go":  {"proxy.golang.org:443", "sum.golang.org:443"},
	})
	ws := t.TempDir()
	resolve := func(egress ...string) (*wire.CommandIdentity, []byte, error) {
		res, err := r.Resolve(&wire.Submit{Workspace: ws, Request: wire.ActionRequest{Executable: "true", Cwd: ".",
			Profile: wire.ProfileShort, Egress: egress}})
		if err != nil {
			return nil, nil, err
		}
		defer res.Close()
		id := *res.Identity()
		return &id, res.Fingerprint(), nil
	}

	bare, bareFP, err := resolve()
	must(t, err)
	if bare.Egress != nil {
		t.Fatalf("no egress asked, %q in the identity", bare.Egress)
	}
	blob, err := wire.Canonical(bare)
	must(t, err)
	if bytes.Contains(blob, []byte("egress")) {
		t.Fatal("an identity without egress encodes an egress key")
	}

	id, fp, err := resolve("npm", "Registry.NPMjs.org:443", "go", "127.0.0.1:4873")
	must(t, err)
	want := []string{"127.0.0.1:4873", "proxy.golang.org:443", "registry.npmjs.org:443", "sum.golang.org:443"}
	if !slices.Equal(id.Egress, want) {
		t.Fatalf("identity egress %q, want %q", id.Egress, want)
	}
	if bytes.Equal(fp, bareFP) {
		t.Fatal("the fingerprint does not cover the egress list")
	}
	_, same, err := resolve("127.0.0.1:4873", "sum.golang.org:443", "proxy.golang.org:443", "registry.npmjs.org:443")
	must(t, err)
	if !bytes.Equal(same, fp) {
		t.Fatal("the same exact list, asked otherwise, is another fingerprint")
	}

	_, _, err = resolve("npmm")
	wantCode(t, err, wire.CodeArgumentsInvalid)
	if msg := err.Error(); !strings.Contains(msg, `"npmm"`) || !strings.Contains(msg, "go, npm") {
		t.Fatalf("an unknown preset: %q does not name it and the presets there are", msg)
	}
	too := make([]string, wire.MaxEgress+1)
	for i := range too {
		too[i] = "h" + strings.Repeat("x", i) + ".example:443"
	}
	_, _, err = resolve(too[:wire.MaxEgress]...)
	must(t, err)
	_, _, err = resolve(append(too[:wire.MaxEgress:wire.MaxEgress], "npm")...)
	wantCode(t, err, wire.CodeArgumentsInvalid)
}
