package server

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// listenFDsStart is the first descriptor systemd passes (sd_listen_fds(3)).
const listenFDsStart = 3

// activated returns the listening sockets systemd passed this process
// for paths, in the order of paths, or nil when it passed none
// (LISTEN_PID is not this process). Sockets are matched by the path they
// are bound to, never by their order: warrant.socket must name exactly
// these paths (contrib/systemd). Any other passed descriptor, a socket
// that is not a unix stream listener, or a path left without one is
// refused: the broker does not serve on sockets it did not expect. The
// LISTEN_* variables are removed, so that nothing started later sees
// them.
func activated(paths ...string) ([]*net.UnixListener, error) {
	pid, n := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS")
	for _, v := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(v)
	}
	if pid != strconv.Itoa(os.Getpid()) {
		return nil, nil
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 0 || count > 16 {
		return nil, fmt.Errorf("socket activation: LISTEN_FDS is %q, not a count of sockets", n)
	}
	out := make([]*net.UnixListener, len(paths))
	var bound []string
	fail := func(err error) ([]*net.UnixListener, error) {
		for _, l := range out {
			if l != nil {
				l.Close()
			}
		}
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	for fd := listenFDsStart; fd < listenFDsStart+count; fd++ {
		f := os.NewFile(uintptr(fd), "listen-fd-"+strconv.Itoa(fd))
		l, err := net.FileListener(f) // a close-on-exec duplicate
		f.Close()
		if err != nil {
			return fail(fmt.Errorf("descriptor %d: %w", fd, err))
		}
		ul, ok := l.(*net.UnixListener)
		if !ok || ul.Addr().Network() != "unix" {
			l.Close()
			return fail(fmt.Errorf("descriptor %d is a %s listener, not a unix stream socket", fd, l.Addr().Network()))
		}
		ul.SetUnlinkOnClose(false) // the socket unit owns the file
		at := ul.Addr().String()
		bound = append(bound, at)
		i := slices.Index(paths, at)
		if i < 0 || out[i] != nil {
			ul.Close()
			return fail(fmt.Errorf("systemd passed a socket bound to %s; this broker listens on %s: make warrant.socket's ListenStream= lines those paths", at, strings.Join(paths, " and ")))
		}
		out[i] = ul
	}
	for i, l := range out {
		if l == nil {
			return fail(fmt.Errorf("systemd passed %d socket(s) (%s) but none bound to %s", count, strings.Join(bound, ", "), paths[i]))
		}
	}
	return out, nil
}
