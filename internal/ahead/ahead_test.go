package ahead

import (
	"errors"
	"sync/atomic"
	"testing"
)

// TestOneMakesAheadAndDiscardsAtClose: nothing is ready before Refill;
// one value is made per Refill however often it is called while one is
// ready; Take empties it; a failed make leaves nothing; Close waits for
// Go's work and discards what is ready, and no refill runs after it.
func TestOneMakesAheadAndDiscardsAtClose(t *testing.T) {
	var made, discarded atomic.Int32
	fail := false
	o := New(func() (int32, error) {
		if fail {
			return 0, errors.New("no")
		}
		return made.Add(1), nil
	}, func(int32) { discarded.Add(1) })
	if _, ok := o.Take(); ok {
		t.Fatal("a value is ready before any Refill")
	}
	o.Refill()
	o.Wait()
	o.Refill()
	o.Refill()
	o.Wait()
	if made.Load() != 1 {
		t.Fatalf("made %d while one was ready, want 1", made.Load())
	}
	if v, ok := o.Take(); !ok || v != 1 {
		t.Fatalf("Take = %d %v, want 1 true", v, ok)
	}
	if _, ok := o.Take(); ok {
		t.Fatal("Take gave the same value twice")
	}
	fail = true
	o.Refill()
	o.Wait()
	if _, ok := o.Take(); ok {
		t.Fatal("a failed make left a value")
	}
	fail = false
	o.Refill()
	o.Wait()
	var ran atomic.Bool
	o.Go(func() { ran.Store(true) })
	o.Close()
	if !ran.Load() || discarded.Load() != 1 {
		t.Fatalf("after Close: Go's work ran %v, discarded %d, want true 1", ran.Load(), discarded.Load())
	}
	o.Refill()
	o.Wait()
	if _, ok := o.Take(); ok || made.Load() != 2 {
		t.Fatalf("a refill ran after Close (made %d)", made.Load())
	}
}
