package client

import (
	"context"
	"fmt"
	"net"
	"time"

	"warrant/wire"
)

// FollowSilence is how long Follow waits for a frame before it gives up:
// the broker sends a heartbeat after every second of quiet, so silence
// this long means the broker stopped answering.
const FollowSilence = 10 * time.Second

// Follow streams the redacted output f asks for (f.Handle's, from its
// offsets) as the broker releases it: each OutputChunk (data, a
// NotStreamed gap, or an empty heartbeat) is given to each in order,
// and the final status (terminal or unknown) is returned. It uses a
// connection of its own, so the client's other requests (Cancel) go on
// meanwhile. It returns an error when ctx is done, when the broker
// refuses or stops answering (nothing for FollowSilence), or when the
// connection fails; the action is not affected by any of these, Wait
// still learns its end, and a Follow from the offsets reached resumes
// where this one stopped.
func (a *Agent) Follow(ctx context.Context, f *wire.Follow, each func(*wire.OutputChunk)) (*wire.Status, error) {
	handle := f.Handle
	frame, err := wire.EncodeFrame(f)
	if err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "%v", err)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", a.sock.path)
	if err != nil {
		return nil, fmt.Errorf("dial broker: %w", err)
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if _, err := nc.Write(frame); err != nil {
		return nil, fmt.Errorf("send follow: %w", err)
	}
	for {
		nc.SetReadDeadline(time.Now().Add(FollowSilence))
		m, err := wire.ReadFrame(nc, wire.MaxAgentFrame, wire.ReplyChannel)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("follow %s: %w", handle, err)
		}
		switch m := m.(type) {
		case *wire.OutputChunk:
			each(m)
		case *wire.Status:
			return m, nil
		case *wire.Error:
			return nil, m
		default:
			return nil, fmt.Errorf("broker answered %s, which follow cannot get", m.Type())
		}
	}
}
