package cli

import (
	"errors"
	"testing"

	"warrant/wire"
)

// What `broker run` says when it has no result must match what it knows.
func TestRunReportWithoutResult(t *testing.T) {
	for name, c := range map[string]struct {
		r       runReport
		outcome string
		exit    int
	}{
		"a coded refusal":        {runReport{err: wire.Errorf(wire.CodePathInvalid, "no")}, "known_not_executed", exitNotExecuted},
		"not found":              {runReport{err: wire.Errorf(wire.CodeExecutableNotFound, "no")}, "known_not_executed", exitNotFound},
		"answer lost in transit": {runReport{err: errors.New("read frame: connection reset")}, "unknown", exitUnknown},
		"accepted, then lost":    {runReport{handle: "a-1", err: errors.New("read frame: EOF")}, "unknown", exitUnknown},
	} {
		if got := c.r.toJSON().Outcome; got != c.outcome {
			t.Errorf("%s: outcome %s, want %s", name, got, c.outcome)
		}
		if got := c.r.exitCode(); got != c.exit {
			t.Errorf("%s: exit %d, want %d", name, got, c.exit)
		}
	}
}
