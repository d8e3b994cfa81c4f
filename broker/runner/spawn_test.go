package runner

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"warrant/broker/internal/egress"
	"warrant/broker/internal/identity"
	"warrant/internal/envpolicy"
	"warrant/wire"
)

func testLaunch(grant []string, p *egress.Proxy) *Launch {
	id := &wire.CommandIdentity{Executable: wire.Executable{Requested: "curl"}, Argv: []string{"-sS", "https://registry.npmjs.org/"},
		Env:     []wire.EnvVar{{Name: "LANG", Value: "C.UTF-8"}, {Name: "PATH", Value: envpolicy.SanitizedPath}, {Name: "TERM", Value: "dumb"}},
		Profile: wire.ProfileShort, Egress: grant}
	return &Launch{Resolved: (&identity.Resolved{}).WithIdentity(id, nil), Home: "/state/actions/a-1/home", Tmp: "/state/actions/a-1/tmp",
		Egress: p, Lease: "l-1"}
}

// Without a grant the request is today's: no egress port and no proxy
// variable, whatever proxy the broker has. With one, it names the
// proxy's port and its environment carries exactly the variables that
// name it, which is what the launcher's check requires of that port.
func TestSpawnRequestEgress(t *testing.T) {
	p, err := egress.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	port := p.Addr().Port()

	for _, l := range []*Launch{testLaunch(nil, nil), testLaunch(nil, p)} {
		req := SpawnRequest(l)
		want := []wire.EnvVar{{Name: "HOME", Value: l.Home}, {Name: "LANG", Value: "C.UTF-8"},
			{Name: "PATH", Value: envpolicy.SanitizedPath}, {Name: "TERM", Value: "dumb"}, {Name: "TMPDIR", Value: l.Tmp}}
		if req.EgressPort != 0 || !reflect.DeepEqual(req.Env, want) {
			t.Fatalf("no grant: port %d, env %v", req.EgressPort, req.Env)
		}
		if err := envpolicy.Check(req.Env, l.Home, l.Tmp, 0); err != nil {
			t.Fatal(err)
		}
	}

	l := testLaunch([]string{"registry.npmjs.org:443"}, p)
	req := SpawnRequest(l)
	if req.EgressPort != port || port == 0 {
		t.Fatalf("egress port %d, want the proxy's %d", req.EgressPort, port)
	}
	byName := func(a, b wire.EnvVar) int { return strings.Compare(a.Name, b.Name) }
	proxies := slices.DeleteFunc(slices.Clone(req.Env), func(kv wire.EnvVar) bool { return !strings.HasSuffix(strings.ToUpper(kv.Name), "_PROXY") })
	want := envpolicy.ProxyEnv(port)
	slices.SortFunc(want, byName)
	if !reflect.DeepEqual(proxies, want) || len(req.Env) != 5+len(want) || !slices.IsSortedFunc(req.Env, byName) {
		t.Fatalf("env %v, want the five and the proxy's variables %v, sorted", req.Env, want)
	}
	if err := envpolicy.Check(req.Env, l.Home, l.Tmp, port); err != nil {
		t.Fatalf("the launcher would refuse it: %v", err)
	}
	if err := envpolicy.Check(req.Env, l.Home, l.Tmp, 0); err == nil {
		t.Fatal("the proxy's variables pass without a port")
	}
	if req := SpawnRequest(testLaunch([]string{"registry.npmjs.org:443"}, nil)); req.EgressPort != 0 {
		t.Fatalf("a grant without a proxy names port %d", req.EgressPort)
	}
}
