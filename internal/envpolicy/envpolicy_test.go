package envpolicy

import (
	"fmt"
	"slices"
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
	env := Build(environ, nil, "/s/home", "/s/tmp")
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
	if err := Check(env, "/s/home", "/s/tmp", 0); err != nil {
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
		if err := Check(mutate(Build(nil, nil, "/h", "/t")), "/h", "/t", 0); err == nil {
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

// TestDeclaredVariablesAreAddedAndChecked: a declared toolchain variable
// is in the environment Build makes (taking the place of an inherited
// one of the same name) and passes Check; nothing else of environ is.
func TestDeclaredVariablesAreAddedAndChecked(t *testing.T) {
	declared := []wire.EnvVar{{Name: "GOROOT", Value: "/usr/local/go"}, {Name: "GOTELEMETRY", Value: "off"},
		{Name: "LANG", Value: "C"}, {Name: "npm_config_cache", Value: "/c/npm"}}
	env := Build([]string{"LANG=C.UTF-8", "GOROOT=/home/u/evil", "JAVA_HOME=/opt/jdk"}, declared, "/h", "/t")
	got := map[string]string{}
	for _, kv := range env {
		got[kv.Name] = kv.Value
	}
	if got["GOROOT"] != "/usr/local/go" || got["GOTELEMETRY"] != "off" || got["LANG"] != "C" || got["npm_config_cache"] != "/c/npm" {
		t.Fatalf("declared variables not as declared: %v", got)
	}
	if _, ok := got["JAVA_HOME"]; ok || len(env) != 8 {
		t.Fatalf("an undeclared variable was taken from environ: %v", got)
	}
	if err := Check(env, "/h", "/t", 0); err != nil {
		t.Fatalf("Check refuses declared variables: %v", err)
	}
}

// TestDeclareRefuses: the broker refuses, at start, a declared name that
// is malformed, fixed, or looks like a credential, a loader variable, a
// proxy, an agent or warrant's own; and a value with a NUL. Check, the
// launcher's rule, refuses every Denied name whatever the broker sends.
func TestDeclareRefuses(t *testing.T) {
	for _, name := range []string{"LD_PRELOAD", "ld_library_path", "GITHUB_TOKEN", "OPENAI_API_KEY", "MY_SECRET_THING",
		"DB_PASSWORD", "AWS_PROFILE", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK", "HTTPS_PROXY", "http_proxy",
		"WARRANT_CANARY", "WARRANT_PROBE_CANARY", "PATH", "HOME", "TMPDIR", "TERM", "1ABC", "A-B", "A B", "", "LC_x", "LC_"} {
		if err := Declare(name, "v"); err == nil {
			t.Errorf("Declare(%q) accepted", name)
		} else if !strings.Contains(err.Error(), " ") {
			t.Errorf("Declare(%q): %q is not a sentence", name, err)
		}
		if fixed[name] {
			continue
		}
		env := append(Build(nil, nil, "/h", "/t"), wire.EnvVar{Name: name, Value: "v"})
		if err := Check(env, "/h", "/t", 0); err == nil {
			t.Errorf("Check accepted %q", name)
		}
	}
	for _, name := range []string{"GOROOT", "JAVA_HOME", "RUSTUP_HOME", "CARGO_HOME", "GOTELEMETRY", "LC_ALL", "TZ", "_X1"} {
		if err := Declare(name, "v"); err != nil {
			t.Errorf("Declare(%q): %v", name, err)
		}
	}
	if err := Declare("GOROOT", "a\x00b"); err == nil {
		t.Error("a value with a NUL was accepted")
	}
	for _, name := range []string{"HTTPS_PROXY", "NO_PROXY", "no_proxy", "npm_config_proxy", "PIP_PROXY"} {
		if err := Declare(name, "http://proxy.example:3128"); err == nil || !strings.Contains(err.Error(), "the broker sets these itself") ||
			!strings.Contains(err.Error(), "egress lease (broker run --egress") {
			t.Errorf("Declare(%q) does not say the broker sets it for an egress lease: %v", name, err)
		}
	}
}

// TestCheckProxyEnvironment: with an egress port, Check accepts exactly
// ProxyEnv(port) beside the fixed four, and refuses each proxy variable
// missing, twice, or naming anything else, and any other *_PROXY; without
// one, it refuses every proxy variable, each alone.
func TestCheckProxyEnvironment(t *testing.T) {
	const port = 40123
	base := Build(nil, nil, "/h", "/t")
	with := func(extra ...wire.EnvVar) []wire.EnvVar { return append(slices.Clone(base), extra...) }
	proxy := ProxyEnv(port)
	if err := Check(with(proxy...), "/h", "/t", port); err != nil {
		t.Fatalf("Check refuses ProxyEnv(%d): %v", port, err)
	}
	if len(proxy) != 11 || ProxyEnv(0) != nil {
		t.Fatalf("ProxyEnv(%d) has %d variables, ProxyEnv(0) %v", port, len(proxy), ProxyEnv(0))
	}
	refused := map[string][]wire.EnvVar{
		"no proxy variables": base,
		"another port's":     with(ProxyEnv(port + 1)...),
		"FTP_PROXY besides":  with(append(slices.Clone(proxy), wire.EnvVar{Name: "FTP_PROXY", Value: proxy[0].Value})...),
		"GIT_PROXY besides":  with(append(slices.Clone(proxy), wire.EnvVar{Name: "GIT_PROXY", Value: "x"})...),
	}
	for i, kv := range proxy {
		rest := slices.Delete(slices.Clone(proxy), i, i+1)
		refused[kv.Name+" missing"] = with(rest...)
		refused[kv.Name+" twice"] = with(append(slices.Clone(proxy), kv)...)
		for _, v := range []string{"http://192.0.2.1:" + fmt.Sprint(port), "http://127.0.0.1:1", "", "http://user:pw@127.0.0.1:" + fmt.Sprint(port)} {
			if v != kv.Value {
				refused[kv.Name+"="+v] = with(append(rest, wire.EnvVar{Name: kv.Name, Value: v})...)
			}
		}
	}
	for name, env := range refused {
		if err := Check(env, "/h", "/t", port); err == nil {
			t.Errorf("port %d, %s: accepted", port, name)
		}
	}
	if err := Check(with(proxy...), "/h", "/t", 0); err == nil {
		t.Error("no egress port: ProxyEnv accepted")
	}
	for _, kv := range append(proxy, wire.EnvVar{Name: "FTP_PROXY", Value: "x"}) {
		if err := Check(with(kv), "/h", "/t", 0); err == nil {
			t.Errorf("no egress port: %s=%q accepted", kv.Name, kv.Value)
		}
	}
}
