package follow

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"warrant/wire"
)

// testHub is a hub spilling to a fresh directory, with small bounds so
// that the tests cross them with little data, and a clock and timers
// the test drives.
func testHub(t *testing.T) (*Hub, *time.Time) {
	t.Helper()
	now := time.Unix(1000, 0)
	h := New()
	h.now = func() time.Time { return now }
	h.after = func(time.Duration, func()) {}
	h.window, h.hold, h.resume, h.maxSpill = 4<<10, 64<<10, 3<<10, 1<<30
	if err := h.SpillTo(filepath.Join(t.TempDir(), "output")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h, &now
}

// pattern is n recognisable bytes from offset off of a stream.
func pattern(off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (off+i)%23)
	}
	return b
}

// received is what a follower was sent: each stream's bytes, and its
// gaps as [from, to) ranges, checked to be contiguous from the start
// offsets.
type received struct {
	data [2][]byte
	gaps [2][][2]uint64
	at   [2]uint64
}

// drain takes everything the follower can be sent now.
func (r *received) drain(t *testing.T, s *Sub) (done bool) {
	t.Helper()
	for {
		p, done := s.Next()
		if p.Stream == 0 {
			return done
		}
		k := int(p.Stream) - 1
		if p.Offset != r.at[k] {
			t.Fatalf("%s part at offset %d, want %d", p.Stream, p.Offset, r.at[k])
		}
		if p.NotStreamed > 0 {
			r.gaps[k] = append(r.gaps[k], [2]uint64{p.Offset, p.Offset + p.NotStreamed})
			r.at[k] += p.NotStreamed
			continue
		}
		if len(p.Data) == 0 || len(p.Data) > wire.MaxChunkData {
			t.Fatalf("a part of %d bytes", len(p.Data))
		}
		r.data[k] = append(r.data[k], p.Data...)
		r.at[k] += uint64(len(p.Data))
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// A follower that reads nothing while 10 MiB are published is never
// waited for, and is then sent every byte, in order, from the window and
// the spill; memory stays at the window. Once it has taken the ended
// action's output and left, the spill is gone.
func TestSlowFollowerGetsEveryByte(t *testing.T) {
	h, _ := testHub(t)
	s := h.Subscribe("a", [2]uint64{})
	const total = 10 << 20
	for n := 0; n < total; {
		k := 1 + n%(70<<10) // chunks of many sizes, some over the window
		k = min(k, total-n)
		h.Publish("a", wire.Stdout, pattern(n, k))
		n += k
	}
	h.Publish("a", wire.Stderr, []byte("late\n"))
	a := h.actions["a"]
	if len(a.streams[0].ring) != int(h.window) || h.memory.Load() != int64(2*h.window) {
		t.Fatalf("window %d bytes, %d in all; the bound is %d per stream", len(a.streams[0].ring), h.memory.Load(), h.window)
	}
	spilled := filepath.Join(h.dir, "a", "stdout")
	if fi, err := os.Stat(spilled); err != nil || fi.Size() != total-int64(h.window) {
		t.Fatalf("spill %s: %v (want %d bytes)", spilled, err, total-h.window)
	}
	h.End("a")
	var r received
	if !r.drain(t, s) {
		t.Fatal("the follower was not told the end once it had everything")
	}
	if !bytes.Equal(r.data[0], pattern(0, total)) || string(r.data[1]) != "late\n" || len(r.gaps[0])+len(r.gaps[1]) > 0 {
		t.Fatalf("sent %d + %d bytes (equal: %v), gaps %v", len(r.data[0]), len(r.data[1]), bytes.Equal(r.data[0], pattern(0, total)), r.gaps)
	}
	s.Close()
	if exists(filepath.Join(h.dir, "a")) || h.actions["a"] != nil || h.memory.Load() != 0 {
		t.Fatalf("after the follower had everything: spill there %v, entry %v, %d bytes of windows", exists(filepath.Join(h.dir, "a")), h.actions["a"] != nil, h.memory.Load())
	}
}

// A follower that keeps up writes nothing to disk.
func TestFollowerThatKeepsUpSpillsNothing(t *testing.T) {
	h, _ := testHub(t)
	s := h.Subscribe("a", [2]uint64{})
	defer s.Close()
	var r received
	const total = 1000 * 1000
	for n := 0; n < total; n += 1000 {
		h.Publish("a", wire.Stdout, pattern(n, 1000))
		r.drain(t, s)
	}
	if !bytes.Equal(r.data[0], pattern(0, total)) || exists(filepath.Join(h.dir, "a")) {
		t.Fatalf("sent %d bytes; spill made: %v", len(r.data[0]), exists(filepath.Join(h.dir, "a")))
	}
}

// A follower that leaves before the end is parked: what it was not sent,
// and the resume bytes before, are spilled as the action goes on, and a
// follower resuming from where it got to is sent the rest, with no gap
// — though it was cut off with bytes in flight.
func TestParkedFollowerResumes(t *testing.T) {
	for _, behind := range []bool{false, true} {
		t.Run(fmt.Sprint("behind=", behind), func(t *testing.T) {
			h, _ := testHub(t)
			s := h.Subscribe("a", [2]uint64{})
			var r received
			n := 0
			for ; n < 100<<10; n += 1000 {
				h.Publish("a", wire.Stdout, pattern(n, 1000))
				if !behind {
					r.drain(t, s) // it keeps up, from the window
				}
			}
			if behind {
				p, _ := s.Next()
				r.data[0], r.at[0] = append(r.data[0], p.Data...), uint64(len(p.Data))
			}
			s.Close() // killed
			for ; n < 1<<20; n += 10 << 10 {
				h.Publish("a", wire.Stdout, pattern(n, 10<<10))
			}
			h.End("a")
			printed := r.at[0] - h.resume // it printed less than it was sent
			r.data[0], r.at[0] = r.data[0][:printed], printed
			s = h.Subscribe("a", [2]uint64{printed, Done}) // as broker output --stream stdout --from
			r.at[1] = Done
			if !r.drain(t, s) || !bytes.Equal(r.data[0], pattern(0, n)) || len(r.gaps[0]) > 0 {
				t.Fatalf("resumed from %d: %d bytes, gaps %v", printed, len(r.data[0]), r.gaps[0])
			}
			s.Close()
			if exists(filepath.Join(h.dir, "a")) || h.actions["a"] != nil {
				t.Fatal("the spill outlived the follower that took it")
			}
		})
	}
}

// A parked claim is let go ParkLinger after the end, and the hold (the
// first bytes, kept for a first follower) Linger after it: their spill
// goes with them, and a follower coming later is told what it missed.
func TestParkedAndHeldBytesExpire(t *testing.T) {
	h, now := testHub(t)
	h.Publish("held", wire.Stdout, pattern(0, 20<<10)) // no one follows it
	s := h.Subscribe("parked", [2]uint64{})
	h.Publish("parked", wire.Stdout, pattern(0, 20<<10))
	s.Close()
	h.End("held")
	h.End("parked")
	*now = now.Add(Linger + time.Second)
	h.sweep()
	if h.actions["held"] != nil || exists(filepath.Join(h.dir, "held")) || !exists(filepath.Join(h.dir, "parked", "stdout")) {
		t.Fatalf("after Linger: held entry %v, spill %v; parked spill %v", h.actions["held"] != nil,
			exists(filepath.Join(h.dir, "held")), exists(filepath.Join(h.dir, "parked", "stdout")))
	}
	*now = now.Add(ParkLinger)
	h.sweep()
	if h.actions["parked"] != nil || exists(filepath.Join(h.dir, "parked")) {
		t.Fatal("a parked claim outlived ParkLinger")
	}
}

// The hold keeps the first HoldBytes of an action no one follows yet,
// and nothing past them is kept: a follower that comes after more was
// printed is sent them, then a gap with the exact range it missed, then
// what is printed from then on.
func TestLateFollowerIsToldTheRangeItMissed(t *testing.T) {
	h, _ := testHub(t)
	const total = 200 << 10
	for n := 0; n < total; n += 8 << 10 {
		h.Publish("a", wire.Stdout, pattern(n, 8<<10))
	}
	if fi, err := os.Stat(filepath.Join(h.dir, "a", "stdout")); err != nil || uint64(fi.Size()) != h.hold {
		t.Fatalf("the hold spilled %v (%v); want %d bytes", fi, err, h.hold)
	}
	s := h.Subscribe("a", [2]uint64{})
	defer s.Close()
	var r received
	r.drain(t, s)
	h.Publish("a", wire.Stdout, pattern(total, 100))
	r.drain(t, s)
	want := [][2]uint64{{h.hold, total}}
	if !bytes.Equal(r.data[0], append(pattern(0, int(h.hold)), pattern(total, 100)...)) || fmt.Sprint(r.gaps[0]) != fmt.Sprint(want) {
		t.Fatalf("late follower: %d bytes, gaps %v, want gaps %v", len(r.data[0]), r.gaps[0], want)
	}
}

// A stream's spill never extends past maxSpill: a stalled follower is
// sent what it holds and told the range past it.
func TestSpillIsBounded(t *testing.T) {
	h, _ := testHub(t)
	h.maxSpill = 100 << 10
	s := h.Subscribe("a", [2]uint64{})
	defer s.Close()
	const total = 300 << 10
	h.Publish("a", wire.Stdout, pattern(0, total))
	if fi, _ := os.Stat(filepath.Join(h.dir, "a", "stdout")); fi == nil || uint64(fi.Size()) > h.maxSpill {
		t.Fatalf("spill %v over its bound %d", fi, h.maxSpill)
	}
	var r received
	r.drain(t, s)
	want := [][2]uint64{{h.maxSpill, total - h.window}}
	if fmt.Sprint(r.gaps[0]) != fmt.Sprint(want) || len(r.data[0]) != int(h.maxSpill+h.window) {
		t.Fatalf("gaps %v, want %v; %d bytes", r.gaps[0], want, len(r.data[0]))
	}
}

// A spill that cannot be written is a gap, not a failure of Publish.
func TestFailedSpillIsAGap(t *testing.T) {
	h, _ := testHub(t)
	if err := os.WriteFile(filepath.Join(h.dir, "a"), nil, 0o600); err != nil { // its directory cannot be made
		t.Fatal(err)
	}
	s := h.Subscribe("a", [2]uint64{})
	defer s.Close()
	h.Publish("a", wire.Stdout, pattern(0, 20<<10))
	var r received
	r.drain(t, s)
	if fmt.Sprint(r.gaps[0]) != fmt.Sprint([][2]uint64{{0, 20<<10 - h.window}}) || len(r.data[0]) != int(h.window) {
		t.Fatalf("gaps %v, %d bytes", r.gaps[0], len(r.data[0]))
	}
}

// A follower of one stream is sent that one only, from its offset.
func TestFollowOneStreamFromAnOffset(t *testing.T) {
	h, _ := testHub(t)
	h.Publish("a", wire.Stdout, pattern(0, 1000))
	h.Publish("a", wire.Stderr, pattern(0, 1000))
	s := h.Subscribe("a", [2]uint64{Done, 600})
	defer s.Close()
	r := received{at: [2]uint64{Done, 600}}
	h.End("a")
	if !r.drain(t, s) || len(r.data[0]) != 0 || !bytes.Equal(r.data[1], pattern(600, 400)) {
		t.Fatalf("stdout %d bytes, stderr %q", len(r.data[0]), r.data[1])
	}
}

// Publish never keeps the caller's slice, and copies nothing no one
// needs: with no follower, past the hold, a chunk costs no allocation.
// Following a handle that never printed leaves nothing behind; windows
// are bounded over all actions.
func TestPublishCopiesOnlyWhatIsKept(t *testing.T) {
	h, _ := testHub(t)
	s := h.Subscribe("a", [2]uint64{})
	p := []byte("secret-free output\n")
	h.Publish("a", wire.Stdout, p)
	copy(p, "XXXXXXXXXXXXXXXXXX\n")
	var r received
	if r.drain(t, s); string(r.data[0]) != "secret-free output\n" {
		t.Fatalf("the sent bytes changed with the caller's slice: %q", r.data[0])
	}
	s.Close()
	h.Publish("b", wire.Stdout, pattern(0, int(h.hold)+1)) // past the hold
	chunk := pattern(0, 64<<10)
	if n := testing.AllocsPerRun(100, func() { h.Publish("b", wire.Stdout, chunk) }); n != 0 {
		t.Fatalf("%v allocations per chunk that no one keeps", n)
	}
	h.Subscribe("nosuch", [2]uint64{}).Close()
	if _, ok := h.actions["nosuch"]; ok {
		t.Fatal("following an unknown handle left an entry")
	}
	h.maxMemory = 8 * int64(h.window)
	for i := range 20 {
		h.Publish(fmt.Sprint("m-", i), wire.Stdout, []byte("x"))
	}
	if h.memory.Load() > h.maxMemory {
		t.Fatalf("%d bytes of windows, the bound is %d", h.memory.Load(), h.maxMemory)
	}
}

// What a previous broker spilled is removed by the next SpillTo, and
// Close removes every spill.
func TestSpillsNeverOutliveTheirBroker(t *testing.T) {
	h, _ := testHub(t)
	h.Publish("a", wire.Stdout, pattern(0, 20<<10)) // held: spilled
	if !exists(filepath.Join(h.dir, "a", "stdout")) {
		t.Fatal("nothing spilled")
	}
	next := New()
	if err := next.SpillTo(h.dir); err != nil || exists(filepath.Join(h.dir, "a")) {
		t.Fatalf("SpillTo left the previous spill: %v", err)
	}
	h.Publish("b", wire.Stdout, pattern(0, 20<<10))
	h.Close()
	if entries, _ := os.ReadDir(h.dir); len(entries) > 0 {
		t.Fatalf("Close left %v", entries)
	}
}

// A page: a follower limited to n bytes of data per stream is sent that
// much of a stream and no more (gaps not counted), and Spent says so;
// what it was not sent stays held for the next page, exactly from where
// this one stopped.
func TestPageStopsAtItsLimit(t *testing.T) {
	h, _ := testHub(t)
	h.Publish("a", wire.Stdout, pattern(0, 100<<10))
	h.Publish("a", wire.Stderr, pattern(0, 10))
	var r received
	for page := 0; ; page++ {
		s := h.Subscribe("a", r.at)
		s.Limit(30 << 10)
		before := len(r.data[0])
		r.drain(t, s)
		got := len(r.data[0]) - before
		spent := s.Spent()
		s.Close()
		if got > 30<<10 || spent != (got == 30<<10) {
			t.Fatalf("page %d: %d bytes of stdout, spent %v", page, got, spent)
		}
		if !spent {
			break
		}
	}
	if !bytes.Equal(r.data[0], pattern(0, 100<<10)) || !bytes.Equal(r.data[1], pattern(0, 10)) || len(r.gaps[0]) > 0 {
		t.Fatalf("the pages hold %d and %d bytes, gaps %v", len(r.data[0]), len(r.data[1]), r.gaps)
	}
}

// A window starts small and grows, its bytes kept in place, up to the
// hub's window: an action that prints little holds little memory.
func TestWindowGrowsAsNeeded(t *testing.T) {
	h, _ := testHub(t)
	h.window = 512 << 10
	s := h.Subscribe("a", [2]uint64{})
	defer s.Close()
	h.Publish("a", wire.Stdout, pattern(0, 10))
	if got := h.memory.Load(); got != firstRing {
		t.Fatalf("%d bytes of window for 10 bytes of output, want %d", got, firstRing)
	}
	var r received
	r.drain(t, s)
	h.Publish("a", wire.Stdout, pattern(10, 100<<10))
	h.Publish("a", wire.Stdout, pattern(10+100<<10, 200<<10))
	if got := h.memory.Load(); got != 512<<10 || exists(filepath.Join(h.dir, "a")) {
		t.Fatalf("%d bytes of window for 300 KiB not yet taken (want 512 KiB, nothing spilled)", got)
	}
	r.drain(t, s)
	if !bytes.Equal(r.data[0], pattern(0, 10+300<<10)) {
		t.Fatalf("the window's bytes changed as it grew: %d bytes", len(r.data[0]))
	}
}
