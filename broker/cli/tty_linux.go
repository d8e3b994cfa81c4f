package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// The termios requests that read and set a terminal's mode (tty.go).
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)

// readable waits at most timeout for terminal fd to have something to
// read (or its end: the read says which); an error says why it cannot
// be waited on.
func readable(fd int, timeout time.Duration) (bool, error) {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, int(timeout/time.Millisecond))
	switch {
	case errors.Is(err, unix.EINTR) || err == nil && n == 0:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("poll the terminal: %w", err)
	case p[0].Revents&unix.POLLNVAL != 0:
		return false, errors.New("the terminal cannot be polled (POLLNVAL: it is not open)")
	}
	return true, nil
}

// flushInput discards what was typed on terminal f and not yet read
// (tcflush TCIFLUSH); a failure leaves it to be read.
func flushInput(f *os.File) {
	unix.IoctlSetInt(int(f.Fd()), unix.TCFLSH, unix.TCIFLUSH)
}
