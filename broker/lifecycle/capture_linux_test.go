package lifecycle

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// A stream that fills its pipe gets a pipeBytes pipe, one that does not
// keeps the default; either way every byte reaches the sink, counted.
// The first bytes are in the pipe before the capture starts, so that its
// first read finds the pipe full (or not) whatever the scheduling.
func TestCaptureGrowsOnlyAFullPipe(t *testing.T) {
	for _, size := range []int{100, 4 << 20} {
		r, w, err := pipe()
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		first := min(size, pipeDefault)
		if _, err := w.Write(data[:first]); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		c := newCapture(r, &got, 1<<40, func() {})
		if _, err := w.Write(data[first:]); err != nil {
			t.Fatal(err)
		}
		w.Close()
		<-c.done
		capacity, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !c.complete || c.n != uint64(size) || !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("%d bytes written: %d captured, complete %v, equal %v", size, c.n, c.complete, bytes.Equal(got.Bytes(), data))
		}
		want := pipeDefault
		if size > pipeDefault {
			want = pipeBytes
		}
		if capacity != want {
			t.Errorf("%d bytes written: the pipe holds %d bytes, want %d", size, capacity, want)
		}
	}
}
