package auditctl

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Messages splits one datagram into its netlink messages' types and
// payloads; a malformed length ends it.
func Messages(b []byte, each func(typ uint16, payload []byte)) {
	for len(b) >= unix.NLMSG_HDRLEN {
		n := int(binary.NativeEndian.Uint32(b[0:4]))
		if n < unix.NLMSG_HDRLEN || n > len(b) {
			return
		}
		each(binary.NativeEndian.Uint16(b[4:6]), b[unix.NLMSG_HDRLEN:n])
		b = b[min(len(b), (n+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1)):]
	}
}

// request sends one audit control message to the kernel with payload and
// returns the payload of its reply of type want (0: an acknowledgement
// alone), or the kernel's error.
func request(typ uint16, payload []byte, want uint16) ([]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	msg := make([]byte, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:6], typ)
	binary.NativeEndian.PutUint16(msg[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:12], 1)
	copy(msg[unix.NLMSG_HDRLEN:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	buf := make([]byte, 8192)
	var reply []byte
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, err
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // only the kernel answers
		}
		var done bool
		var kerr error
		Messages(buf[:n], func(t uint16, p []byte) {
			switch {
			case t == unix.NLMSG_ERROR && len(p) >= 4:
				if e := int32(binary.NativeEndian.Uint32(p[0:4])); e != 0 {
					kerr = unix.Errno(-e)
					done = true
				} else if want == 0 {
					done = true
				}
			case t == want && want != 0:
				reply = append([]byte(nil), p...)
				done = true
			}
		})
		if kerr != nil {
			return nil, kerr
		}
		if done {
			return reply, nil
		}
	}
}

// Status reports whether the kernel's audit is enabled (AUDIT_GET; it
// needs CAP_AUDIT_CONTROL), only then does Landlock log its refusals, and
// whether a lost record panics the kernel (failure mode 2).
func Status() (on, panics bool, err error) {
	p, err := request(unix.AUDIT_GET, nil, unix.AUDIT_GET)
	if err != nil {
		return false, false, fmt.Errorf("audit: read the kernel's audit status: %w", err)
	}
	if len(p) < 12 {
		return false, false, fmt.Errorf("audit: a status of %d bytes", len(p))
	}
	return binary.NativeEndian.Uint32(p[4:8]) != 0, binary.NativeEndian.Uint32(p[8:12]) == 2, nil
}

// SetEnabled sends AUDIT_SET with the enabled field alone (it needs
// CAP_AUDIT_CONTROL). It is for tests (audittest): the broker never
// changes the host's audit.
func SetEnabled(on bool) error {
	var st [8]byte // struct audit_status: mask, enabled, … (the kernel takes a short one)
	binary.NativeEndian.PutUint32(st[0:4], unix.AUDIT_STATUS_ENABLED)
	if on {
		binary.NativeEndian.PutUint32(st[4:8], 1)
	}
	_, err := request(unix.AUDIT_SET, st[:], 0)
	return err
}
