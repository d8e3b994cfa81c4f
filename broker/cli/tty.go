package cli

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// keyMode puts terminal f in the mode the watch queue reads keys in: no
// line editing, no echo, and no signals from keys (Ctrl-C arrives as a
// byte), each byte as it is typed; output is processed as usual. It
// returns what restores the mode f had.
func keyMode(f *os.File) (restore func(), err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, fmt.Errorf("read the terminal's mode: %w", err)
	}
	keys := *old
	keys.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
	keys.Iflag &^= unix.IXON
	keys.Cc[unix.VMIN], keys.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &keys); err != nil {
		return nil, fmt.Errorf("set the terminal's mode: %w", err)
	}
	return func() { unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}

// termWidth is the width in columns of the terminal w is (at least
// minWidth), or pipeWidth when w is none (card.go).
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return max(int(ws.Col), minWidth)
		}
	}
	return pipeWidth
}
