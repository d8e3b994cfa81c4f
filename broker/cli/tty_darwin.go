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
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA)
	return err == nil
}

// The termios requests that read and set a terminal's mode (tty.go).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)

// readable waits at most timeout for terminal fd to have something to
// read (or its end: the read says which); an error says why it cannot
// be waited on. It selects: poll(2) does not support devices here.
func readable(fd int, timeout time.Duration) (bool, error) {
	var r unix.FdSet
	r.Set(fd)
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	n, err := unix.Select(fd+1, &r, nil, nil, &tv)
	switch {
	case errors.Is(err, unix.EINTR):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("select on the terminal: %w", err)
	}
	return n > 0, nil
}

// flushInput discards what was typed on terminal f and not yet read
// (tcflush TCIFLUSH); a failure leaves it to be read.
func flushInput(f *os.File) {
	unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCFLUSH, unix.TCIFLUSH)
}
