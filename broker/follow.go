package broker

import (
	"context"
	"time"

	"warrant/broker/internal/follow"
	"warrant/wire"
)

// heartbeat is how long a follower may go without a frame: after this
// much quiet it is sent an empty OutputChunk.
const heartbeat = time.Second

// HandleFollow answers Follow on agent.sock: the action's redacted output
// from the offsets asked for, every byte in order (from the action's
// spill when the follower is behind: broker/internal/follow), as
// OutputChunk frames carrying their offsets, with a NotStreamed gap for
// a range no one holds any more; then its final status once it is
// terminal or unknown, or, once a page's limit is reached, its status
// then. The action never waits for the follower; a
// follower that stops reading is dropped when a frame is not taken
// within the idle timeout, and what it was not sent is kept for it to
// resume from (Follow with its offsets) until follow.ParkLinger after
// the end.
func (b *Broker) HandleFollow(ctx context.Context, m wire.Message, send func(wire.Message) error) wire.Message {
	st, err := b.follow(ctx, m.(*wire.Follow), send)
	return b.answer(st, err)
}

func (b *Broker) follow(ctx context.Context, f *wire.Follow, toClient func(wire.Message) error) (wire.Message, error) {
	hub, handle := b.cfg.Output, f.Handle
	// A follower that went away or stopped reading is an ordinary end of
	// the follow, not an internal error: it may follow again from where
	// it stopped.
	send := func(m wire.Message) error {
		if err := toClient(m); err != nil {
			return wire.Errorf(wire.CodeIOFailed, "the follower of %s went away or stopped reading: %v", handle, err)
		}
		return nil
	}
	from := [2]uint64{f.StdoutFrom, f.StderrFrom}
	switch f.Stream {
	case wire.Stdout:
		from[1] = follow.Done
	case wire.Stderr:
		from[0] = follow.Done
	}
	sub := hub.Subscribe(handle, from)
	defer sub.Close()
	if f.Limit > 0 {
		sub.Limit(f.Limit)
	}
	changed := b.changes()
	st, err := b.j.Status(ctx, handle)
	if err != nil {
		return nil, err
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	quiet := true
	for {
		over := st.State == wire.StateTerminal || st.State == wire.StateUnknown
		if over {
			// Its output was all published before its end was recorded;
			// the hub may not have been told yet.
			hub.End(handle)
		}
		p, done := sub.Next()
		if p.Stream != 0 {
			if err := send(&wire.OutputChunk{Handle: handle, Stream: p.Stream, Offset: p.Offset, Data: p.Data, NotStreamed: p.NotStreamed}); err != nil {
				return nil, err
			}
			quiet = false
			if sub.Spent() { // a page: the status as it stands
				return b.j.Status(ctx, handle)
			}
			continue
		}
		if done && over {
			if err := sendForgotten(handle, sub.At(), st.Result, send); err != nil {
				return nil, err
			}
			return st, nil
		}
		select {
		case <-sub.Wake():
		case <-changed:
			changed = b.changes()
			if st, err = b.j.Status(ctx, handle); err != nil {
				return nil, err
			}
		case <-beat.C:
			if quiet {
				if err := send(&wire.OutputChunk{Handle: handle}); err != nil {
					return nil, err
				}
			}
			quiet = true
		case <-ctx.Done():
			return nil, wire.Errorf(wire.CodeIOFailed, "the broker is shutting down")
		}
	}
}

// sendForgotten sends, once an action's end is known, a gap for each
// stream's bytes past the follower's offset that the hub no longer knew
// of (its entry was freed, or made by another broker): the result counts
// every byte of each redacted stream.
func sendForgotten(handle string, at [2]uint64, res *wire.Result, send func(wire.Message) error) error {
	if res == nil {
		return nil
	}
	for k, total := range []uint64{res.Stdout.RedactedBytes, res.Stderr.RedactedBytes} {
		if at[k] < total {
			if err := send(&wire.OutputChunk{Handle: handle, Stream: wire.OutputStream(k + 1), Offset: at[k], NotStreamed: total - at[k]}); err != nil {
				return err
			}
		}
	}
	return nil
}
