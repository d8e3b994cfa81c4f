package policy

import (
	"slices"
	"strings"
	"testing"

	"warrant/broker/internal/protect"
	"warrant/wire"
)

// TestCardNamesWhatIsPreventedAndDetected: the card says which changes the
// sandbox prevents and which it only detects, names every protected path
// protect watches, and how many files the alias scan checked.
func TestCardNamesWhatIsPreventedAndDetected(t *testing.T) {
	if !slices.Equal(protectedNames[:len(protect.Paths)], protect.Paths) {
		t.Fatalf("the card names %v, protect watches %v", protectedNames, protect.Paths)
	}
	id := &wire.CommandIdentity{Workspace: wire.DirIdentity{Path: "/ws"}, Profile: wire.ProfileShort,
		Policy: wire.Policy{ReadExec: []string{"/usr"}, Devices: []string{"/dev/null"}}}
	for by, says := range map[string]string{wire.ProtectedByMount: "Read-only (binds in the action's own mount namespace)",
		wire.ProtectedByDetect: "Detected, not prevented (no user namespaces):"} {
		card := Limitations(id, 1234, "", Protection(by, "no user namespaces"), "Memory and the number of processes are NOT limited on this host.")
		for _, want := range []string{"Prevented: changing the mode, owner", says, ".git/hooks/", ".envrc", "Not hidden: whether a path outside exists",
			"(1234 files)", "No network", "\nMemory and the number of processes are NOT limited on this host."} {
			if !strings.Contains(card, want) {
				t.Errorf("the card lacks %q:\n%s", want, card)
			}
		}
	}
}
