package admission

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"warrant/broker/internal/caches"
	"warrant/broker/internal/statedir"
	"warrant/internal/envpolicy"
	"warrant/wire"
)

// maxEnvFile bounds <state>/env.
const maxEnvFile = 64 << 10

// DeclaredEnv is the operator's declared toolchain environment
// (envpolicy's "Declared variables"): the lines of the env file (<state>/env,
// absent: none), then the flags (Config.Env, `--env NAME=VALUE`), a flag
// taking the place of the file's value for the same name. Every name must
// pass envpolicy.Declare and must not be one a workspace cache sets; a
// name twice in one source, a malformed line or a refused name is an
// error that names it, so the broker does not start.
//
// The env file is plain text, one NAME=VALUE a line: the name runs to the
// first "=", the value is everything after it, byte for byte (no quotes,
// escapes, expansion or trimming). Empty lines, lines of blanks and lines
// starting with "#" are ignored. It must be a regular file of the
// broker's uid that no one else may write.
func DeclaredEnv(file string, flags []string) ([]wire.EnvVar, error) {
	fromFile, err := readEnvFile(file)
	if err != nil {
		return nil, err
	}
	byName := map[string]string{}
	for _, kv := range fromFile {
		byName[kv.Name] = kv.Value
	}
	seen := map[string]bool{}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--env %q: want NAME=VALUE", f)
		}
		if err := declare(name, value); err != nil {
			return nil, fmt.Errorf("--env %s: %w", name, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("--env %s is given twice", name)
		}
		seen[name] = true
		byName[name] = value
	}
	if len(byName) > envpolicy.MaxDeclared {
		return nil, fmt.Errorf("%d variables are declared; at most %d may be", len(byName), envpolicy.MaxDeclared)
	}
	env := make([]wire.EnvVar, 0, len(byName))
	for n, v := range byName {
		env = append(env, wire.EnvVar{Name: n, Value: v})
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env, nil
}

// declare is envpolicy.Declare, and the variables a cache sets refused.
func declare(name, value string) error {
	if slices.Contains(caches.Names(), name) {
		if name == caches.CargoTarget.Name {
			return fmt.Errorf("%s is set by the workspace cache when asked for (--cargo-target-cache); it cannot be declared", name)
		}
		return fmt.Errorf("%s is set by the workspace cache (<state>/caches); it cannot be declared", name)
	}
	return envpolicy.Declare(name, value)
}

// readEnvFile reads and checks the env file; a missing one declares
// nothing.
func readEnvFile(file string) ([]wire.EnvVar, error) {
	b, err := statedir.ReadOperatorFile("the declared environment", file, maxEnvFile)
	if err != nil || b == nil {
		return nil, err
	}
	return parseEnvFile(file, b)
}

// parseEnvFile parses the env file's bytes b (file names it in errors):
// every variable in the order given, or an error naming the first bad
// line and nothing else.
func parseEnvFile(file string, b []byte) ([]wire.EnvVar, error) {
	var env []wire.EnvVar
	seen := map[string]int{}
	for i, line := range bytes.Split(b, []byte("\n")) {
		n, s := i+1, string(line)
		if strings.Trim(s, " \t") == "" || strings.HasPrefix(s, "#") {
			continue
		}
		name, value, ok := strings.Cut(s, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%s line %d: want NAME=VALUE, a comment starting with # or an empty line", file, n)
		case strings.HasSuffix(value, "\r"):
			return nil, fmt.Errorf("%s line %d: ends in a carriage return; the file takes plain \\n line ends", file, n)
		case seen[name] != 0:
			return nil, fmt.Errorf("%s line %d: %s is declared already on line %d", file, n, name, seen[name])
		}
		if err := declare(name, value); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", file, n, err)
		}
		seen[name] = n
		env = append(env, wire.EnvVar{Name: name, Value: value})
	}
	return env, nil
}
