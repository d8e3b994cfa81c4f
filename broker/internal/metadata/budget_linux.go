package metadata

import (
	"time"

	"golang.org/x/sys/unix"
)

// The budget of one action's notifications: every call the broker
// answers costs it CPU time (about 20 µs a call), which no limit of the
// action counted, so a target flooding chmod made the broker spend most
// of a core for it. Each action may have Burst calls answered at once and
// then Rate a second; past that the server holds the next answer back
// until the rate allows it. The caller is stopped in the kernel meanwhile
// (backpressure), and no call fails for it. An ordinary build stays
// within it: a 10,000-file `tar -xpf` makes about 30,000 calls, at 3,500
// to 10,500 a second on the test machine; a flood reached 50,000.
const (
	Burst = 100_000 // calls answered at once
	Rate  = 10_000  // calls a second once the burst is spent
)

// budget is a token bucket of Burst calls refilled at Rate a second.
type budget struct {
	tokens float64
	last   time.Time
}

func newBudget(now time.Time) budget { return budget{tokens: Burst, last: now} }

// take spends one call at now and returns 0, or, when none is left,
// returns how long until one is, spending nothing: the caller waits that
// long and takes again.
func (b *budget) take(now time.Time) time.Duration {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(Burst, b.tokens+d.Seconds()*Rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / Rate * float64(time.Second))
}

// hold waits until the budget has a call for the next answer and returns
// how long it waited.
func (b *budget) hold() time.Duration {
	var held time.Duration
	for {
		start := time.Now()
		wait := b.take(start)
		if wait == 0 {
			return held
		}
		time.Sleep(wait)
		held += time.Since(start)
	}
}

// threadCPU is the CPU time, user and system, the calling thread has
// used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
