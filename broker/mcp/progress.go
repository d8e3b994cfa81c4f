package mcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/receipt"
	"warrant/wire"
)

// progress sends one call's progress notifications, when the client sent
// a progress token: the elapsed milliseconds as the progress value (it
// only grows), and a sentence.
type progress struct {
	ss    *sdk.ServerSession
	token any
	start time.Time
	meter *Meter
	last  float64
}

func newProgress(req *sdk.CallToolRequest, m *Meter, start time.Time) *progress {
	return &progress{ss: req.Session, token: req.Params.GetProgressToken(), start: start, meter: m}
}

func (p *progress) send(ctx context.Context, msg string) {
	if p.token == nil {
		return
	}
	v := max(float64(time.Since(p.start).Milliseconds()), p.last+1)
	p.last = v
	// A client that went away ends the call anyway; nothing to do here.
	_ = p.ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: p.token, Progress: v, Message: msg})
}

// running reports an action still going.
func (p *progress) running(ctx context.Context, handle string, state wire.ActionState) {
	msg := fmt.Sprintf("action %s %s for %.1f s", handle, state, time.Since(p.start).Seconds())
	if n, ok := p.meter.released(handle); ok {
		msg += fmt.Sprintf("; %d bytes of output so far", n)
	}
	p.send(ctx, msg)
}

// approval reports a request still pending.
func (p *progress) approval(ctx context.Context, id string) {
	p.send(ctx, fmt.Sprintf("waiting %.1f s for a human to approve request %s (broker approve %s)", time.Since(p.start).Seconds(), id, id))
}

// Meter counts each action's output as an embedded broker releases it
// (redacted), so that progress can say how much there is before the end;
// against a daemon there is no Meter and the counts come with the result.
// A nil *Meter counts nothing.
type Meter struct {
	mu sync.Mutex
	n  map[string]uint64
}

// Live is the runner's Live callback.
func (m *Meter) Live(handle string, _ receipt.StreamName, p []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]uint64{}
	}
	m.n[handle] += uint64(len(p))
}

func (m *Meter) released(handle string) (uint64, bool) {
	if m == nil {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[handle], true
}

func (m *Meter) forget(handle string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.n, handle)
	m.mu.Unlock()
}
