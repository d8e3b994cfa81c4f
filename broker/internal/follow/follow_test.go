package follow

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"warrant/wire"
)

// drain takes everything queued and returns the data per stream and the
// gaps per stream.
func drain(s *Sub) (data map[wire.OutputStream][]byte, gaps map[wire.OutputStream]uint64, ended bool) {
	data, gaps = map[wire.OutputStream][]byte{}, map[wire.OutputStream]uint64{}
	parts, ended := s.Take()
	for _, p := range parts {
		data[p.Stream] = append(data[p.Stream], p.Data...)
		gaps[p.Stream] += p.NotStreamed
	}
	return data, gaps, ended
}

// A follower that never reads is never waited for: Publish returns at
// once, the follower's queue stays within QueueBytes, and everything it
// was not sent is counted, at the place it happened.
func TestSlowFollowerIsBoundedAndToldOfTheGap(t *testing.T) {
	h := New()
	s := h.Subscribe("a")
	defer s.Close()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	const total = 10 << 20
	for n := 0; n < total; n += len(chunk) {
		h.Publish("a", wire.Stdout, chunk)
	}
	h.Publish("a", wire.Stderr, []byte("late\n"))
	if s.queued > QueueBytes {
		t.Fatalf("queue holds %d bytes, the bound is %d", s.queued, QueueBytes)
	}
	parts, _ := s.Take()
	var got, gap uint64
	for _, p := range parts {
		got += uint64(len(p.Data))
		gap += p.NotStreamed
	}
	if got != QueueBytes || got+gap != total+5 {
		t.Fatalf("sent %d, gap %d: want %d sent and %d in all", got, gap, QueueBytes, total+5)
	}
	last := parts[len(parts)-1]
	if last.Stream != wire.Stderr || last.NotStreamed != 5 {
		t.Fatalf("the gap of stderr is not where it happened: last part %+v", last)
	}
	// Once drained, the follower is sent new output again.
	h.Publish("a", wire.Stdout, []byte("again"))
	if d, g, _ := drain(s); string(d[wire.Stdout]) != "again" || g[wire.Stdout] != 0 {
		t.Fatalf("after the drain: %q, gap %d", d[wire.Stdout], g[wire.Stdout])
	}
}

// A follower attaching after output was released is sent the held first
// bytes, then a gap for what was released and not held, then the rest.
func TestLateFollowerGetsTheEarlyOutput(t *testing.T) {
	h := New()
	h.Publish("a", wire.Stdout, []byte("first\n"))
	h.Publish("a", wire.Stderr, []byte("warn\n"))
	s := h.Subscribe("a")
	d, g, ended := drain(s)
	if string(d[wire.Stdout]) != "first\n" || string(d[wire.Stderr]) != "warn\n" || g[wire.Stdout]+g[wire.Stderr] != 0 || ended {
		t.Fatalf("late follower got %q %q gaps %v ended %v", d[wire.Stdout], d[wire.Stderr], g, ended)
	}
	s.Close()

	big := bytes.Repeat([]byte("y"), EarlyBytes+100)
	h.Publish("b", wire.Stdout, big[:EarlyBytes])
	h.Publish("b", wire.Stdout, big[EarlyBytes:])
	s = h.Subscribe("b")
	defer s.Close()
	d, g, _ = drain(s)
	if len(d[wire.Stdout]) != EarlyBytes || g[wire.Stdout] != 100 {
		t.Fatalf("held %d bytes with a gap of %d; want %d and 100", len(d[wire.Stdout]), g[wire.Stdout], EarlyBytes)
	}
}

// Held output is bounded across actions, and an ended action's lingers
// for Linger, then is freed.
func TestHeldOutputIsBoundedAndFreed(t *testing.T) {
	now := time.Unix(1000, 0)
	h := New()
	h.now = func() time.Time { return now }
	chunk := bytes.Repeat([]byte("z"), EarlyBytes)
	for i := range 2 * MaxEarly / EarlyBytes {
		h.Publish(fmt.Sprint("act-", i), wire.Stdout, chunk)
	}
	if h.early > MaxEarly {
		t.Fatalf("held %d bytes, the bound is %d", h.early, MaxEarly)
	}
	h.End("act-0")
	s := h.Subscribe("act-0") // a quick action, followed after it ended
	if d, _, ended := drain(s); len(d[wire.Stdout]) != EarlyBytes || !ended {
		t.Fatalf("after the end: %d bytes, ended %v", len(d[wire.Stdout]), ended)
	}
	s.Close()
	now = now.Add(Linger + time.Second)
	h.End("act-1")
	if _, ok := h.actions["act-0"]; ok {
		t.Fatal("an action ended longer than Linger ago is still held")
	}
	if _, ok := h.actions["act-1"]; !ok {
		t.Fatal("an action that just ended is no longer held")
	}
	// Following a handle that never printed leaves nothing behind.
	h.Subscribe("nosuch").Close()
	if _, ok := h.actions["nosuch"]; ok {
		t.Fatal("following an unknown handle left an entry")
	}
}

// Publish keeps a copy of what someone keeps, never the caller's slice,
// and copies nothing that no one keeps: past the early bytes, with no
// follower or only full ones, a chunk costs no allocation.
func TestPublishCopiesOnlyWhatIsKept(t *testing.T) {
	h := New()
	s := h.Subscribe("a")
	defer s.Close()
	p := []byte("secret-free output\n")
	h.Publish("a", wire.Stdout, p)
	copy(p, "XXXXXXXXXXXXXXXXXX\n")
	late := h.Subscribe("a")
	defer late.Close()
	for _, sub := range []*Sub{s, late} {
		if d, _, _ := drain(sub); string(d[wire.Stdout]) != "secret-free output\n" {
			t.Fatalf("the queued bytes changed with the caller's slice: %q", d[wire.Stdout])
		}
	}
	h.Publish("a", wire.Stdout, bytes.Repeat([]byte("f"), EarlyBytes)) // not held: it does not fit
	h.Publish("a", wire.Stdout, bytes.Repeat([]byte("f"), QueueBytes)) // both queues are full now
	chunk := bytes.Repeat([]byte("g"), 64<<10)
	if n := testing.AllocsPerRun(100, func() { h.Publish("a", wire.Stdout, chunk) }); n != 0 {
		t.Fatalf("%v allocations per chunk that no one keeps", n)
	}
}
