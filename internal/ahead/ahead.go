package ahead

import "sync"

// One is a value made ahead; see the package doc.
type One[T any] struct {
	make    func() (T, error)
	discard func(T)

	mu     sync.Mutex
	ready  T
	has    bool
	making chan struct{} // closed when the make in flight ends; nil when none is
	closed bool
	bg     sync.WaitGroup // the refill and Go's work in flight
}

// New returns a One that makes values with make and gives those it will
// never hand out (after Close) to discard. It makes none until Refill.
func New[T any](make func() (T, error), discard func(T)) *One[T] {
	return &One[T]{make: make, discard: discard}
}

// Take returns the ready value and true, or false when there is none.
// When one is being made it waits for that make, which has a head start
// on any the caller could begin.
func (o *One[T]) Take() (T, bool) {
	o.mu.Lock()
	m := o.making
	o.mu.Unlock()
	if m != nil {
		<-m
	}
	return o.TakeReady()
}

// TakeReady is Take without the wait: for a caller that knows the make
// in flight is not for it.
func (o *One[T]) TakeReady() (T, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.ready, o.has
	var zero T
	o.ready, o.has = zero, false
	return v, ok
}

// Refill makes the next value in the background, unless one is ready or
// being made, or Close has begun.
func (o *One[T]) Refill() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.has || o.making != nil {
		return
	}
	made := make(chan struct{})
	o.making = made
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		v, err := o.make()
		o.mu.Lock()
		defer o.mu.Unlock()
		o.making = nil
		defer close(made)
		switch {
		case err != nil:
		case o.closed:
			o.discard(v)
		default:
			o.ready, o.has = v, true
		}
	}()
}

// Go runs f in the background; Close waits for it.
func (o *One[T]) Go(f func()) {
	o.bg.Add(1)
	go func() {
		defer o.bg.Done()
		f()
	}()
}

// Wait waits for the refill and the background work in flight.
func (o *One[T]) Wait() { o.bg.Wait() }

// Close stops refills, waits for the background work and discards the
// ready value.
func (o *One[T]) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.bg.Wait()
	if v, ok := o.Take(); ok {
		o.discard(v)
	}
}
