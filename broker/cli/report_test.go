package cli

import (
	"errors"
	"testing"

	"warrant/broker/view"
	"warrant/wire"
)

// What `broker run` says when it has no result must match what it knows.
func TestRunReportWithoutResult(t *testing.T) {
	for name, c := range map[string]struct {
		r       view.Ending
		outcome string
		exit    int
	}{
		"a coded refusal":        {view.Ending{Err: wire.Errorf(wire.CodePathInvalid, "no")}, "known_not_executed", exitNotExecuted},
		"not found":              {view.Ending{Err: wire.Errorf(wire.CodeExecutableNotFound, "no")}, "known_not_executed", exitNotFound},
		"answer lost in transit": {view.Ending{Err: errors.New("read frame: connection reset")}, "unknown", exitUnknown},
		"accepted, then lost":    {view.Ending{Handle: "a-1", Err: errors.New("read frame: EOF")}, "unknown", exitUnknown},
	} {
		if got := c.r.Action().Outcome; got != c.outcome {
			t.Errorf("%s: outcome %s, want %s", name, got, c.outcome)
		}
		if got := exitCode(&c.r); got != c.exit {
			t.Errorf("%s: exit %d, want %d", name, got, c.exit)
		}
	}
}
