package runner

import (
	"context"
	"io"

	"warrant/broker"
	"warrant/broker/lifecycle"
)

// Probe runs one of the broker's own probe actions through the pinned
// launcher and the lifecycle, exactly as Start would, but synchronously
// and without journal records, receipts or live output: the capability
// report is its record. The caller keeps ownership of l.
func (r *Runner) Probe(ctx context.Context, l *broker.Launch, stdout, stderr io.Writer) broker.ProbeRun {
	res := lifecycle.Run(r.spec(l, stdout, stderr, ctx.Done(), nil))
	return broker.ProbeRun{Outcome: res.Outcome, ExitCode: res.ExitCode, Err: res.Err, Ready: res.Ready,
		GroupGone: res.GroupGone}
}
