package broker

import (
	"context"
	"database/sql"
)

// RecordEvent journals one lifecycle event of an action in flight (for
// example TERM_SENT or KILL_SENT) as it is observed. STARTED and the
// terminal events are recorded by MarkRunning and Finish.
func (b *Broker) RecordEvent(ctx context.Context, handle, kind, detail string) error {
	err := b.j.tx(ctx, func(tx *sql.Tx) error { return b.j.event(ctx, tx, handle, kind, detail) })
	return wrapUnlessCoded("record event", err)
}

// Logf writes a diagnostic line through the configured logger.
func (b *Broker) Logf(format string, args ...any) { b.cfg.Logf(format, args...) }
