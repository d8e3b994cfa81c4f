package envpolicy

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"warrant/wire"
)

// SanitizedPath is the PATH every target gets, and the only PATH on which
// the broker resolves executable names.
const SanitizedPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// MaxDeclared bounds the variables an operator may declare, so that with
// the fixed four, LANG, TZ, every LC_* and a cache's variables an
// environment stays within wire.MaxEnvVars.
const MaxDeclared = 32

// inherited are the names copied from the broker's environment when set.
var inherited = map[string]bool{"LANG": true, "TZ": true}

// fixed are the names whose values are the broker's, never an operator's:
// Check requires each, with exactly its value.
var fixed = map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "TERM": true}

// inheritable reports whether name is copied from the broker's
// environment when set: LANG, TZ and LC_* with an upper-case suffix.
func inheritable(name string) bool {
	return inherited[name] || (strings.HasPrefix(name, "LC_") && validLC(name[3:]))
}

func validLC(rest string) bool {
	if rest == "" {
		return false
	}
	for _, c := range rest {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// wellFormed reports whether name is a portable variable name
// ([A-Za-z_][A-Za-z0-9_]*, at most 256 bytes) and, if it starts with
// LC_, a locale category (LC_ and upper-case letters).
func wellFormed(name string) bool {
	if name == "" || len(name) > 256 || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range []byte(name) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return !strings.HasPrefix(name, "LC_") || validLC(name[3:])
}

// Denied returns why name may never reach a target, whoever asks, or ""
// when it may. The comparison ignores case.
func Denied(name string) string {
	u := strings.ToUpper(name)
	switch {
	case strings.HasPrefix(u, "LD_"), strings.HasPrefix(u, "DYLD_"):
		return "it is read by the dynamic loader (LD_*, DYLD_*)"
	case strings.HasSuffix(u, "_TOKEN"), strings.HasSuffix(u, "_KEY"), strings.Contains(u, "SECRET"),
		strings.Contains(u, "PASSWORD"), strings.Contains(u, "PASSWD"), strings.Contains(u, "CREDENTIAL"),
		strings.HasPrefix(u, "AWS_"):
		return "it looks like a credential (*_TOKEN, *_KEY, *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL*, AWS_*)"
	case u == "SSH_AUTH_SOCK", u == "SSH_AGENT_PID", u == "GPG_AGENT_INFO":
		return "it leads to a credential agent"
	case strings.HasSuffix(u, "_PROXY"):
		return "it names a proxy (*_PROXY: HTTPS_PROXY, NO_PROXY, npm_config_proxy, …), which may carry credentials; " +
			"the broker sets these itself, to its own proxy, for an action with an egress lease (broker run --egress HOST:PORT), and to nothing else"
	case strings.HasPrefix(u, "WARRANT_"):
		return "it is one of warrant's own variables (WARRANT_*)"
	}
	return ""
}

// Declare checks one variable an operator declares for every target
// (`broker serve --env NAME=VALUE`, <state>/env): a well-formed name that
// is neither one of the fixed four (PATH, HOME, TMPDIR, TERM) nor Denied,
// and a value of valid UTF-8 without NUL within wire.MaxArgBytes.
func Declare(name, value string) error {
	switch {
	case !wellFormed(name):
		return fmt.Errorf("%q is not a variable name ([A-Za-z_][A-Za-z0-9_]*; LC_ names are LC_ and upper-case letters)", name)
	case fixed[name]:
		return fmt.Errorf("%s is fixed by warrant (PATH is the sanitized PATH, TERM is dumb, HOME and TMPDIR are per action)", name)
	case Denied(name) != "":
		return fmt.Errorf("%s is refused: %s; no value of an operator's reaches a target", name, Denied(name))
	case len(value) > wire.MaxArgBytes || strings.IndexByte(value, 0) >= 0 || !utf8.ValidString(value):
		return fmt.Errorf("the value of %s must be valid UTF-8 without NUL, at most %d bytes", name, wire.MaxArgBytes)
	}
	return nil
}

// Build returns the environment for a target, sorted by name: PATH, HOME,
// TMPDIR and TERM=dumb fixed, LANG, LC_* and TZ copied from environ when
// present, and the operator's declared variables (already checked with
// Declare), which take the place of an inherited one of the same name.
// Nothing else in environ is ever taken.
func Build(environ []string, declared []wire.EnvVar, home, tmp string) []wire.EnvVar {
	env := []wire.EnvVar{
		{Name: "HOME", Value: home},
		{Name: "PATH", Value: SanitizedPath},
		{Name: "TERM", Value: "dumb"},
		{Name: "TMPDIR", Value: tmp},
	}
	seen := map[string]bool{}
	for _, kv := range declared {
		if fixed[kv.Name] || seen[kv.Name] {
			panic("envpolicy: internal error: Build given an undeclarable or repeated " + kv.Name)
		}
		seen[kv.Name] = true
		env = append(env, kv)
	}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || seen[name] || strings.IndexByte(value, 0) >= 0 {
			continue
		}
		if inheritable(name) {
			seen[name] = true
			env = append(env, wire.EnvVar{Name: name, Value: value})
		}
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env
}

// Check verifies an environment received from the broker, which the
// launcher trusts no more than any other byte it is sent (doc.go): every
// name well-formed, unique and not Denied; PATH exactly SanitizedPath,
// TERM exactly dumb, HOME and TMPDIR exactly the action's private
// directories, all four present.
func Check(env []wire.EnvVar, home, tmp string, egressPort uint16) error {
	want := map[string]string{"PATH": SanitizedPath, "TERM": "dumb", "HOME": home, "TMPDIR": tmp}
	proxy := map[string]string{}
	for _, kv := range ProxyEnv(egressPort) {
		want[kv.Name], proxy[kv.Name] = kv.Value, kv.Value
	}
	seen := make(map[string]bool, len(env))
	for _, kv := range env {
		if !wellFormed(kv.Name) {
			return fmt.Errorf("environment variable %q is not a well-formed name", kv.Name)
		}
		if _, isProxy := proxy[kv.Name]; !isProxy {
			if why := Denied(kv.Name); why != "" {
				return fmt.Errorf("environment variable %s is refused: %s", kv.Name, why)
			}
		}
		if seen[kv.Name] {
			return fmt.Errorf("environment variable %s appears twice", kv.Name)
		}
		seen[kv.Name] = true
		if v, isFixed := want[kv.Name]; isFixed {
			if kv.Value != v {
				return fmt.Errorf("environment variable %s=%q, want %q", kv.Name, kv.Value, v)
			}
			delete(want, kv.Name)
		}
	}
	for name := range want {
		return fmt.Errorf("environment variable %s is missing", name)
	}
	return nil
}

// ProxyEnv is what tells a target with an egress grant where the broker's
// proxy is (http://127.0.0.1:port), in each spelling common clients read:
// curl, git, Python, Go, pip and npm; NO_PROXY empty, so that every
// destination goes through it. None when port is 0. Check requires
// exactly these with a port, and refuses every *_PROXY name without one.
func ProxyEnv(port uint16) []wire.EnvVar {
	if port == 0 {
		return nil
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	var env []wire.EnvVar
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
		"npm_config_proxy", "npm_config_https_proxy", "PIP_PROXY"} {
		env = append(env, wire.EnvVar{Name: name, Value: url})
	}
	return append(env, wire.EnvVar{Name: "NO_PROXY"}, wire.EnvVar{Name: "no_proxy"})
}
