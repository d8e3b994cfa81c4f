package runner

import (
	"strings"
	"testing"

	"warrant/wire"
)

// A timeout names the limits it met and the longer profiles (each a new
// approval), and says in one line which profile to ask for: a first build
// fills the workspace's cache and often needs more than `short`.
func TestTimeoutSuggestsTheNextProfile(t *testing.T) {
	for p, want := range map[wire.Profile]string{
		wire.ProfileShort: ", and a longer profile needs its own approval: standard (2m0s), long (30m0s); " +
			"a first build or test run, which fills the workspace's cache, often needs more: ask for --profile standard",
		wire.ProfileStandard: ", and a longer profile needs its own approval: long (30m0s); " +
			"a first build or test run, which fills the workspace's cache, often needs more: ask for --profile long",
		wire.ProfileLong: ", the longest",
	} {
		got := longer(p)
		if got != want || strings.Contains(got, "\n") {
			t.Errorf("longer(%s) = %q, want %q", p, got, want)
		}
	}
}
