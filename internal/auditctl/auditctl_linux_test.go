package auditctl

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// msg is one netlink message of type typ carrying payload, padded to
// NLMSG_ALIGNTO.
func msg(typ uint16, payload string) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(payload)+unix.NLMSG_ALIGNTO)
	binary.NativeEndian.PutUint32(b[0:4], uint32(unix.NLMSG_HDRLEN+len(payload)))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	b = append(b, payload...)
	for len(b)%unix.NLMSG_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

// TestMessagesSplitsADatagram: each message is handed on with its own
// payload, padding skipped; a length past the datagram's end, or shorter
// than a header, ends it there.
func TestMessagesSplitsADatagram(t *testing.T) {
	bad := msg(3, "cc")
	binary.NativeEndian.PutUint32(bad[0:4], 1000)
	short := msg(4, "dd")
	binary.NativeEndian.PutUint32(short[0:4], 4)
	for name, c := range map[string]struct {
		datagram []byte
		want     []string
	}{
		"two":          {slices.Concat(msg(1, "a"), msg(2, "bbbbb")), []string{"1 a", "2 bbbbb"}},
		"too long":     {slices.Concat(msg(1, "a"), bad, msg(2, "b")), []string{"1 a"}},
		"too short":    {slices.Concat(short, msg(2, "b")), nil},
		"a header cut": {msg(1, "a")[:unix.NLMSG_HDRLEN-1], nil},
	} {
		var got []string
		Messages(c.datagram, func(typ uint16, p []byte) { got = append(got, string(rune('0'+typ))+" "+string(p)) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}
