package admission

import (
	"slices"
	"strings"
	"testing"

	"warrant/internal/envpolicy"
)

// FuzzDeclaredEnvFile: parsing <state>/env either fails with a sentence
// naming the file and a line, and nothing else, or gives variables that
// each pass the broker's declaration rule, with unique names, and that
// parse back to the same variables when written as NAME=VALUE lines.
func FuzzDeclaredEnvFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := parseEnvFile("/s/env", b)
		if err != nil {
			if env != nil || !strings.HasPrefix(err.Error(), "/s/env line ") {
				t.Fatalf("error %q with %d variables", err, len(env))
			}
			return
		}
		var lines []string
		seen := map[string]bool{}
		for _, kv := range env {
			if err := declare(kv.Name, kv.Value); err != nil || seen[kv.Name] || envpolicy.Denied(kv.Name) != "" {
				t.Fatalf("parsed %s=%q: %v (seen %v)", kv.Name, kv.Value, err, seen[kv.Name])
			}
			seen[kv.Name] = true
			lines = append(lines, kv.Name+"="+kv.Value)
		}
		again, err := parseEnvFile("/s/env", []byte(strings.Join(lines, "\n")))
		if err != nil || !slices.Equal(again, env) {
			t.Fatalf("written back and parsed: %v, %v; want %v", again, err, env)
		}
	})
}
