package cli

import (
	"slices"
	"testing"
)

// TestPositionals: the names of positional arguments come from the
// synopsis, flags and their values left out.
func TestPositionals(t *testing.T) {
	for synopsis, want := range map[string][]string{
		"approve ID [--uses N] [--ttl D] [--binding B] [--json]": {"ID"},
		"resolve HANDLE success|failed|stop [--note N]":          {"HANDLE", "success|failed|stop"},
		"status [HANDLE] [--json]":                               {"HANDLE"},
		"receipts show ID [--json]":                              {"ID"},
		"caches prune --older-than D|--all [--json]":             nil,
		"run [flags] -- EXECUTABLE [ARG...]":                     {"EXECUTABLE", "ARG"},
	} {
		if got := positionals(synopsis); !slices.Equal(got, want) {
			t.Errorf("positionals(%q) = %q, want %q", synopsis, got, want)
		}
	}
}
