package retry

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// calls returns a call that fails with errs in turn, then succeeds, and
// counts how often it was made.
func calls(errs ...error) (func() error, *int) {
	n := new(int)
	return func() error {
		*n++
		if *n <= len(errs) {
			return errs[*n-1]
		}
		return nil
	}, n
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func TestRetry(t *testing.T) {
	wrapped := fmt.Errorf("read: %w", syscall.EINTR)
	for _, c := range []struct {
		name      string
		retry     func(func() error) error
		errs      []error
		want      error
		wantCalls int
	}{
		{"EINTR success", EINTR, nil, nil, 1},
		{"EINTR other error", EINTR, []error{syscall.ENOENT}, syscall.ENOENT, 1},
		{"EINTR interrupted then done", EINTR, repeat(syscall.EINTR, Bound-1), nil, Bound},
		{"EINTR gives up at the bound", EINTR, repeat(syscall.EINTR, Bound), syscall.EINTR, Bound},
		{"EINTR keeps EAGAIN", EINTR, []error{syscall.EAGAIN}, syscall.EAGAIN, 1},
		{"EINTR keeps a wrapped EINTR", EINTR, []error{wrapped}, wrapped, 1},
		{"EAGAIN retries both", EAGAIN, []error{syscall.EAGAIN, syscall.EINTR, syscall.EAGAIN}, nil, 4},
		{"EAGAIN gives up at the bound", EAGAIN, repeat(syscall.EAGAIN, Bound+3), syscall.EAGAIN, Bound},
		{"EAGAIN other error", EAGAIN, []error{syscall.EAGAIN, syscall.EXDEV}, syscall.EXDEV, 2},
	} {
		call, n := calls(c.errs...)
		if err := c.retry(call); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
		if *n != c.wantCalls {
			t.Errorf("%s: %d calls, want %d", c.name, *n, c.wantCalls)
		}
	}
}
