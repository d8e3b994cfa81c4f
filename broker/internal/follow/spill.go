package follow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// span is the byte range [from, to) of a stream.
type span struct{ from, to uint64 }

// spill is one stream's spill file: the bytes of spans, each at file
// offset (its stream offset - base). Writes only ever append at the
// stream's eviction point, so spans are sorted and disjoint. The file is
// made on the first write, truncated when no span is left, and removed
// with its action. Guarded by its action's mu.
type spill struct {
	path   string // "": this stream never spills
	max    uint64 // the file's extent is at most this (Hub.maxSpill)
	f      *os.File
	base   uint64
	spans  []span
	failed error // a write failed: it takes nothing more
}

// maxSpans bounds the spans of one spill; a write that would start one
// more is refused (a gap), which only a pathological pattern of
// followers coming and going can reach.
const maxSpans = 64

// write appends data, the stream's bytes from offset from on, or as much
// of it as the bound leaves room for.
func (s *spill) write(from uint64, data []byte) {
	if s.path == "" || s.failed != nil || len(data) == 0 {
		return
	}
	n := len(s.spans)
	extend := n > 0 && s.spans[n-1].to == from
	if n == 0 {
		s.base = from
	}
	switch {
	case from < s.base || (n > 0 && from < s.spans[n-1].to):
		panic(fmt.Sprintf("follow: internal error: spill write at %d, before its end", from))
	case !extend && n == maxSpans || from-s.base >= s.max:
		return
	}
	data = data[:min(uint64(len(data)), s.max-(from-s.base))]
	if s.f == nil {
		if err := os.Mkdir(filepath.Dir(s.path), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			s.failed = err
			return
		}
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			s.failed = err
			return
		}
		s.f = f
	}
	if _, err := s.f.WriteAt(data, int64(from-s.base)); err != nil {
		s.failed = err // a full disk: what it holds stays readable
		return
	}
	if extend {
		s.spans[n-1].to += uint64(len(data))
	} else {
		s.spans = append(s.spans, span{from, from + uint64(len(data))})
	}
}

// at returns the span holding offset at, or the first that starts after
// it (ok false; from is the end of the stream's spans then).
func (s *spill) at(at uint64) (sp span, ok bool) {
	for _, sp := range s.spans {
		if at < sp.to {
			return sp, at >= sp.from
		}
	}
	return span{from: ^uint64(0)}, false
}

// read reads from offset at, which a span holds, into buf.
func (s *spill) read(at uint64, sp span, buf []byte) (int, error) {
	n := min(uint64(len(buf)), sp.to-at)
	return s.f.ReadAt(buf[:n], int64(at-s.base))
}

// keep drops the spans no claim needs (wanted reports whether one needs
// a byte of a range); with none left the file is emptied.
func (s *spill) keep(wanted func(from, to uint64) bool) {
	kept := s.spans[:0]
	for _, sp := range s.spans {
		if wanted(sp.from, sp.to) {
			kept = append(kept, sp)
		}
	}
	s.spans = kept
	if len(kept) == 0 && s.f != nil {
		s.f.Truncate(0) // best effort: the file goes with its action anyway
	}
}

// close closes the file; its action removes its directory.
func (s *spill) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.spans = nil
}
