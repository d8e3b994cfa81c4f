package runner

import (
	"context"
	"io"

	"warrant/broker/lifecycle"
)

// Probe runs one of the broker's own probe actions through the pinned
// launcher and the lifecycle, exactly as Start would, but synchronously
// and without an Observer, receipts or live output: the capability
// report is its record. The caller keeps ownership of l.
func (r *Runner) Probe(ctx context.Context, l *Launch, stdout, stderr io.Writer) lifecycle.Result {
	return lifecycle.Run(r.spec(l, stdout, stderr, ctx.Done(), nil, nil))
}
