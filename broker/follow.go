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
// as it is released, as OutputChunk frames (with a NotStreamed gap for
// what this follower could not be sent: broker/internal/follow), then its
// final status once it is terminal or unknown. The action never waits for
// the follower; a follower that stops reading is dropped when a frame is
// not taken within the idle timeout.
func (b *Broker) HandleFollow(ctx context.Context, m wire.Message, send func(wire.Message) error) wire.Message {
	st, err := b.follow(ctx, m.(*wire.Follow).Handle, send)
	return b.answer(st, err)
}

func (b *Broker) follow(ctx context.Context, handle string, send func(wire.Message) error) (wire.Message, error) {
	hub := b.cfg.Output
	sub := hub.Subscribe(handle)
	defer sub.Close()
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
		parts, ended := sub.Take()
		if err := sendParts(handle, parts, send); err != nil {
			return nil, err
		}
		if len(parts) > 0 {
			quiet = false
			continue
		}
		if ended && over {
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

// sendParts sends parts as OutputChunk frames of at most wire.MaxChunkData.
func sendParts(handle string, parts []follow.Part, send func(wire.Message) error) error {
	for _, p := range parts {
		if p.NotStreamed > 0 {
			if err := send(&wire.OutputChunk{Handle: handle, Stream: p.Stream, NotStreamed: p.NotStreamed}); err != nil {
				return err
			}
		}
		for d := p.Data; len(d) > 0; {
			k := min(len(d), wire.MaxChunkData)
			if err := send(&wire.OutputChunk{Handle: handle, Stream: p.Stream, Data: d[:k]}); err != nil {
				return err
			}
			d = d[k:]
		}
	}
	return nil
}
