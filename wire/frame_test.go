package wire

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
)

// headerOnly is a stream that yields one frame header and then fails the
// test if anything reads further.
type headerOnly struct {
	hdr   []byte
	extra int // bytes asked for after the header
}

func (r *headerOnly) Read(p []byte) (int, error) {
	if len(r.hdr) == 0 {
		r.extra += len(p)
		return 0, errors.New("read past the header")
	}
	n := copy(p, r.hdr)
	r.hdr = r.hdr[n:]
	return n, nil
}

// TestDecodeRejectsOversizeFrame feeds ReadFrame headers that claim more
// than the cap, up to 4 GiB - 1, and checks it refuses without reading
// the body and without allocating it; DecodeFrame refuses them too.
func TestDecodeRejectsOversizeFrame(t *testing.T) {
	for _, c := range []struct {
		n   uint32
		max int
		ch  Channel
	}{
		{0xffffffff, MaxAgentFrame, AgentChannel},
		{0xffffffff, MaxLauncherFrame, SpawnChannel},
		{MaxAgentFrame + 1, MaxAgentFrame, OperatorChannel},
		{MaxLauncherFrame + 1, MaxLauncherFrame, LauncherChannel},
	} {
		r := &headerOnly{hdr: frame(c.n, nil)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := ReadFrame(r, c.max, c.ch)
		runtime.ReadMemStats(&after)
		switch {
		case err == nil || m != nil:
			t.Errorf("%d bytes: ReadFrame returned %v, %v", c.n, m, err)
		case !errors.Is(err, ErrMalformed) || !expectations["oversize-frame"].MatchString(err.Error()):
			t.Errorf("%d bytes: error %v", c.n, err)
		case r.extra != 0:
			t.Errorf("%d bytes: ReadFrame asked for %d bytes after the header", c.n, r.extra)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
			t.Errorf("%d bytes: ReadFrame allocated %d bytes before refusing", c.n, grew)
		}
		if _, err := DecodeFrame(frame(c.n, nil), c.max, c.ch); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d bytes: DecodeFrame error %v", c.n, err)
		}
	}
}

func TestDecodeFrameLengthMismatch(t *testing.T) {
	body := mustEncode(&Query{Handle: "act-1"})
	for _, n := range []uint32{uint32(len(body)) - 1, uint32(len(body)) + 1, 1, MaxAgentFrame} {
		m, err := DecodeFrame(frame(n, body), MaxAgentFrame, AgentChannel)
		if m != nil || !errors.Is(err, ErrMalformed) || !expectations["frame-length-mismatch"].MatchString(err.Error()) {
			t.Errorf("header %d for %d bytes: %v, %v", n, len(body), m, err)
		}
	}
	for _, buf := range [][]byte{nil, {0}, {0, 0, 0}} {
		if m, err := DecodeFrame(buf, MaxAgentFrame, AgentChannel); m != nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: %v, %v", buf, m, err)
		}
	}
	if m, err := DecodeFrame(frame(0, nil), MaxAgentFrame, AgentChannel); m != nil || !errors.Is(err, ErrMalformed) {
		t.Errorf("empty frame: %v, %v", m, err)
	}
}

// TestFrameStream writes every sample as a frame on one stream and reads
// them back in order, then checks the clean and the torn end of stream.
func TestFrameStream(t *testing.T) {
	var buf bytes.Buffer
	for _, s := range samples() {
		if err := WriteFrame(&buf, s.msg); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	for _, s := range samples() {
		m, err := ReadFrame(&buf, MaxAgentFrame, channelOf(s.msg.Type()))
		if err != nil || m.Type() != s.msg.Type() {
			t.Fatalf("%s: %v, %v", s.name, m, err)
		}
	}
	if _, err := ReadFrame(&buf, MaxAgentFrame, AgentChannel); err != io.EOF {
		t.Errorf("clean end: %v, want io.EOF", err)
	}
	f, _ := EncodeFrame(&Query{Handle: "act-1"})
	if _, err := ReadFrame(bytes.NewReader(f[:len(f)-1]), MaxAgentFrame, AgentChannel); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("torn body: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader(f[:2]), MaxAgentFrame, AgentChannel); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("torn header: %v, want io.ErrUnexpectedEOF", err)
	}
	if err := WriteFrame(&buf, &Query{}); err == nil {
		t.Error("WriteFrame wrote an invalid message")
	}
	if buf.Len() != 0 {
		t.Errorf("WriteFrame wrote %d bytes of an invalid message", buf.Len())
	}
}

// TestDecodeReturnsNilMessageOnError runs every invalid vector through
// Decode (or DecodeFrame) and requires an untyped nil Message with the
// error, never a partly filled value.
func TestDecodeReturnsNilMessageOnError(t *testing.T) {
	for _, s := range invalidSpecs() {
		m, err := decodeVector(s.data, s.framed, s.channel)
		if err == nil || m != nil {
			t.Errorf("%s: %#v, %v", s.name, m, err)
		}
	}
}
