package ahead

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
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

// TestTakeWaitsForTheMakeInFlight: a Take while a value is being made
// gets that value once it is made, and a Take while a make that will
// fail is in flight gets none; neither starts a make of its own.
// TakeReady does not wait.
func TestTakeWaitsForTheMakeInFlight(t *testing.T) {
	release := make(chan error)
	var made atomic.Int32
	o := New(func() (int32, error) {
		if err := <-release; err != nil {
			return 0, err
		}
		return made.Add(1), nil
	}, func(int32) {})
	defer func() { close(release); o.Close() }() // a failed test lets the make go, so Close returns
	for _, fail := range []bool{false, true} {
		o.Refill()
		if _, ok := o.TakeReady(); ok {
			t.Fatal("TakeReady returned a value while the make was in flight")
		}
		got := make(chan bool)
		go func() { _, ok := o.Take(); got <- ok }()
		select {
		case ok := <-got:
			t.Fatalf("Take returned %v while the make was in flight", ok)
		case <-time.After(20 * time.Millisecond): // it waits (a test of absence: a slow machine only makes it weaker)
		}
		var err error
		if fail {
			err = errors.New("no")
		}
		release <- err
		if ok := <-got; ok == fail {
			t.Fatalf("Take after a make that failed=%v returned %v", fail, ok)
		}
	}
	if made.Load() != 1 {
		t.Fatalf("made %d values, want 1", made.Load())
	}
}
