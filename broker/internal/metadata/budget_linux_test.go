package metadata

import (
	"testing"
	"time"
)

// TestBudgetBurstThenRate: the budget answers Burst calls at once, then
// one every 1/Rate; idle time refills it at Rate up to Burst, never
// beyond; a caller that takes as fast as it is let through gets at most
// Burst + Rate·t calls in t.
func TestBudgetBurstThenRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := newBudget(t0)
	for i := range Burst {
		if w := b.take(t0); w != 0 {
			t.Fatalf("call %d of the burst waits %s", i, w)
		}
	}
	if w := b.take(t0); w != time.Second/Rate {
		t.Fatalf("past the burst: wait %s, want %s", w, time.Second/Rate)
	}
	if w := b.take(t0.Add(time.Second / Rate)); w != 0 {
		t.Fatalf("after 1/Rate: wait %s, want none", w)
	}
	later := t0.Add(time.Hour)
	n := 0
	for b.take(later) == 0 {
		n++
	}
	if n != Burst {
		t.Fatalf("after an hour idle: %d calls at once, want the burst %d", n, Burst)
	}

	// A flood that takes again as soon as it is told it may, for 10 s.
	b, now, calls := newBudget(t0), t0, 0
	end := t0.Add(10 * time.Second)
	for now.Before(end) {
		if w := b.take(now); w != 0 {
			now = now.Add(w)
			continue
		}
		calls++
	}
	if max := Burst + 10*Rate; calls > max || calls < max-1 {
		t.Fatalf("a 10 s flood got %d calls, want %d (burst + 10 s at the rate)", calls, max)
	}
}
