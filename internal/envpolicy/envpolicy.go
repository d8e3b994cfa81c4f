package envpolicy

import (
	"fmt"
	"sort"
	"strings"

	"warrant/wire"
)

// SanitizedPath is the PATH every target gets, and the only PATH on which
// the broker resolves executable names.
const SanitizedPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// inherited are the names copied from the broker's environment when set.
var inherited = map[string]bool{"LANG": true, "TZ": true}

// allowed reports whether name may appear in a target's environment.
func allowed(name string) bool {
	switch name {
	case "PATH", "HOME", "TMPDIR", "TERM":
		return true
	}
	return inheritable(name)
}

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

// Build returns the environment for a target, sorted by name: PATH, HOME,
// TMPDIR and TERM=dumb fixed, plus LANG, LC_* and TZ copied from environ
// when present.
func Build(environ []string, home, tmp string) []wire.EnvVar {
	env := []wire.EnvVar{
		{Name: "HOME", Value: home},
		{Name: "PATH", Value: SanitizedPath},
		{Name: "TERM", Value: "dumb"},
		{Name: "TMPDIR", Value: tmp},
	}
	seen := map[string]bool{}
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

// Check verifies an environment received from the broker: every name
// allowed and unique, PATH exactly
// SanitizedPath, TERM exactly dumb, HOME and TMPDIR exactly the action's
// private directories.
func Check(env []wire.EnvVar, home, tmp string) error {
	want := map[string]string{"PATH": SanitizedPath, "TERM": "dumb", "HOME": home, "TMPDIR": tmp}
	seen := make(map[string]bool, len(env))
	for _, kv := range env {
		if !allowed(kv.Name) {
			return fmt.Errorf("environment variable %q is not on the allowlist", kv.Name)
		}
		if seen[kv.Name] {
			return fmt.Errorf("environment variable %s appears twice", kv.Name)
		}
		seen[kv.Name] = true
		if v, fixed := want[kv.Name]; fixed {
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
