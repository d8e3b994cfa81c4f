package envpolicy

import (
	"strings"
	"testing"

	"warrant/wire"
)

func TestBuildDropsEverythingOffTheAllowlist(t *testing.T) {
	environ := []string{
		"PATH=/home/u/evil:/usr/bin", "LD_PRELOAD=/tmp/x.so", "LD_LIBRARY_PATH=/tmp",
		"AWS_SECRET_ACCESS_KEY=canary", "OPENAI_API_KEY=sk-canary", "SSH_AUTH_SOCK=/tmp/agent",
		"HTTPS_PROXY=http://proxy", "LANG=C.UTF-8", "LC_ALL=C", "LC_lower=x", "TZ=UTC", "HOME=/root",
	}
	env := Build(environ, "/s/home", "/s/tmp")
	got := map[string]string{}
	for _, kv := range env {
		got[kv.Name] = kv.Value
	}
	want := map[string]string{"HOME": "/s/home", "TMPDIR": "/s/tmp", "PATH": SanitizedPath,
		"TERM": "dumb", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv.Value, "canary") {
			t.Errorf("credential leaked through %s", kv.Name)
		}
	}
	if err := Check(env, "/s/home", "/s/tmp"); err != nil {
		t.Fatalf("Check rejects what Build made: %v", err)
	}
}

func TestCheckRejects(t *testing.T) {
	for name, mutate := range map[string]func(env []wire.EnvVar) []wire.EnvVar{
		"LD_PRELOAD": func(e []wire.EnvVar) []wire.EnvVar { return append(e, wire.EnvVar{Name: "LD_PRELOAD", Value: "/x.so"}) },
		"credential": func(e []wire.EnvVar) []wire.EnvVar {
			return append(e, wire.EnvVar{Name: "AWS_SECRET_ACCESS_KEY", Value: "x"})
		},
		"lowercase LC_":   func(e []wire.EnvVar) []wire.EnvVar { return append(e, wire.EnvVar{Name: "LC_x", Value: "C"}) },
		"bare LC_ prefix": func(e []wire.EnvVar) []wire.EnvVar { return append(e, wire.EnvVar{Name: "LC_", Value: "C"}) },
		"PATH changed":    func(e []wire.EnvVar) []wire.EnvVar { return set(e, "PATH", "/tmp:/usr/bin") },
		"HOME elsewhere":  func(e []wire.EnvVar) []wire.EnvVar { return set(e, "HOME", "/root") },
		"TERM not dumb":   func(e []wire.EnvVar) []wire.EnvVar { return set(e, "TERM", "xterm") },
		"TMPDIR missing":  func(e []wire.EnvVar) []wire.EnvVar { return e[:len(e)-1] },
		"PATH twice":      func(e []wire.EnvVar) []wire.EnvVar { return append(e, wire.EnvVar{Name: "PATH", Value: "/tmp"}) },
	} {
		if err := Check(mutate(Build(nil, "/h", "/t")), "/h", "/t"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func set(env []wire.EnvVar, name, value string) []wire.EnvVar {
	for i := range env {
		if env[i].Name == name {
			env[i].Value = value
		}
	}
	return env
}
