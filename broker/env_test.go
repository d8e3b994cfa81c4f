package broker

import "testing"

// TestIdentityEnvironmentIsTheAllowlist: the environment an identity (and
// so its fingerprint) carries is the allowlist built from the broker's
// environment, without the per-action HOME and TMPDIR and without
// anything else the broker has (the rig's broker has SECRET_TOKEN).
func TestIdentityEnvironmentIsTheAllowlist(t *testing.T) {
	r := newRig(t)
	env := r.resolved().Identity().Env
	seen := map[string]bool{}
	for _, kv := range env {
		seen[kv.Name] = true
		if kv.Name == "HOME" || kv.Name == "TMPDIR" || kv.Name == "SECRET_TOKEN" {
			t.Fatalf("identity environment holds %s", kv.Name)
		}
	}
	if !seen["LANG"] || !seen["PATH"] {
		t.Fatalf("identity environment %+v lacks LANG or PATH", env)
	}
}
