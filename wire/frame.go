package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// A frame is a 4-byte big-endian length followed by exactly that many bytes
// holding one encoded message. The same framing is used on stream sockets
// (agent.sock, operator.sock, the macOS launcher socket) and inside one
// SOCK_SEQPACKET datagram (the Linux launcher socket).
const frameHeader = 4

// EncodeFrame returns m encoded and framed.
func EncodeFrame(m Message) ([]byte, error) {
	body, err := Encode(m)
	if err != nil {
		return nil, err
	}
	out := make([]byte, frameHeader, frameHeader+len(body))
	binary.BigEndian.PutUint32(out, uint32(len(body)))
	return append(out, body...), nil
}

// DecodeFrame decodes a whole frame held in one buffer (one datagram). The
// length must match the buffer exactly and be at most max.
func DecodeFrame(buf []byte, max int, ch Channel) (Message, error) {
	if len(buf) < frameHeader {
		return nil, malformed("frame: %d bytes is shorter than its header", len(buf))
	}
	n := binary.BigEndian.Uint32(buf)
	if err := checkFrameLen(n, max); err != nil {
		return nil, err
	}
	if int(n) != len(buf)-frameHeader {
		return nil, malformed("frame: header says %d bytes, datagram holds %d", n, len(buf)-frameHeader)
	}
	return Decode(buf[frameHeader:], ch)
}

// WriteFrame writes m as one frame.
func WriteFrame(w io.Writer, m Message) error {
	buf, err := EncodeFrame(m)
	if err != nil {
		return err
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame of at most max bytes from a stream and decodes
// it. The length is checked before the body is allocated. An I/O error is
// returned as is (io.EOF for a clean end between frames); a bad length or
// body wraps ErrMalformed, after which the stream is out of step and must
// be closed by the caller.
func ReadFrame(r io.Reader, max int, ch Channel) (Message, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if err := checkFrameLen(n, max); err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame: %w", err)
	}
	return Decode(body, ch)
}

func checkFrameLen(n uint32, max int) error {
	switch {
	case n == 0:
		return malformed("frame: empty")
	case uint64(n) > uint64(max):
		return malformed("frame: %d bytes exceeds the cap of %d", n, max)
	}
	return nil
}
