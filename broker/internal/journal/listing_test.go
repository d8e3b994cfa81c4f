package journal

import (
	"context"
	"slices"
	"testing"

	"warrant/wire"
)

// TestListingsCarryTheCommand: a checkpoint says what its lease has left;
// the lease listing names the command it allows and the action listing
// the command, exit code and signal, read back from the journal.
func TestListingsCarryTheCommand(t *testing.T) {
	ctx := context.Background()
	j, l, id := leased(t, 3)
	h, _, err := j.Checkpoint(ctx, l, "s", "", id, nil)
	must(t, err)
	if l.UsesLeft() != 2 {
		t.Errorf("after one checkpoint of three uses, UsesLeft %d", l.UsesLeft())
	}
	leases, err := j.Leases(ctx, "", 10, nil)
	must(t, err)
	if len(leases) != 1 || leases[0].Executable != "true" || !slices.Equal(leases[0].Argv, []string{"x"}) || leases[0].UsesLeft != 2 {
		t.Errorf("leases: %+v", leases)
	}
	code := int32(3)
	must(t, j.Finish(ctx, h, &wire.Result{Outcome: wire.Exited, ExitCode: &code}))
	actions, err := j.Actions(ctx, false, "", 10)
	must(t, err)
	if len(actions) != 1 || !slices.Equal(actions[0].Argv, []string{"x"}) || actions[0].ExitCode == nil || *actions[0].ExitCode != 3 {
		t.Errorf("actions: %+v", actions)
	}
}
