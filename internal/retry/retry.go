package retry

import "syscall"

// Bound is the most times a call is made.
const Bound = 16

// EINTR makes call until it returns anything but EINTR, at most Bound
// times, and returns its last error. call returns the bare errno, as
// golang.org/x/sys/unix's wrappers do; a wrapped EINTR is not retried.
func EINTR(call func() error) error { return do(call, false) }

// EAGAIN is EINTR that retries EAGAIN too.
func EAGAIN(call func() error) error { return do(call, true) }

func do(call func() error, again bool) error {
	var err error
	for range Bound {
		if err = call(); err != syscall.EINTR && (!again || err != syscall.EAGAIN) {
			break
		}
	}
	return err
}
