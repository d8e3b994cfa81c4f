package follow

import (
	"fmt"
	"path/filepath"
	"testing"

	"warrant/wire"
)

// BenchmarkPublish is what publishing costs the pipe's drain, per 64 KiB
// chunk of a 1 GiB stream: with no follower (the hold spills the first
// HoldBytes, then nothing is kept), and with one that keeps up.
func BenchmarkPublish(b *testing.B) {
	chunk := pattern(0, 64<<10)
	for _, followed := range []bool{false, true} {
		b.Run(fmt.Sprint("followed=", followed), func(b *testing.B) {
			b.SetBytes(1 << 30)
			for i := range b.N {
				h := New()
				if err := h.SpillTo(filepath.Join(b.TempDir(), "output")); err != nil {
					b.Fatal(err)
				}
				handle := fmt.Sprint("a-", i)
				var s *Sub
				if followed {
					s = h.Subscribe(handle, [2]uint64{})
				}
				for range (1 << 30) / len(chunk) {
					h.Publish(handle, wire.Stdout, chunk)
					for s != nil {
						if p, _ := s.Next(); p.Stream == 0 {
							break
						}
					}
				}
				h.Close()
			}
		})
	}
}
