package mcp

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// numbered is n bytes of numbered lines: any byte range of it is
// recognisable.
func numbered(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d\n", i)
	}
	return b.String()[:n]
}

// TestWaitPagesTheOutput: run and wait with stdout_from page the output:
// each page is at most pageBytes, starts where the last one's next said,
// and the pages together are the whole redacted stdout; the last says
// complete. Once it was all taken the broker holds none of it, and a
// wait from 0 again says exactly which range it missed.
func TestWaitPagesTheOutput(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{}, nil, "")
	const size = 100_000
	var out actionOut
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"bytes", fmt.Sprint(size)}}, &out)
	if _, err := r.operator.Approve(out.Approval.RequestID, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	res := s.call("wait", map[string]any{"approval_id": out.Approval.RequestID, "stdout_from": 0}, &out)
	var got strings.Builder
	for pages := 1; ; pages++ {
		if res.IsError || out.Output == nil || out.Output.Stdout == nil || out.Output.Stderr != nil || out.Handle == nil {
			t.Fatalf("page %d: %+v %s", pages, out, text(res))
		}
		p := out.Output.Stdout
		if p.From != uint64(got.Len()) || p.Next-p.From != uint64(len(p.Text)) || len(p.Text) > pageBytes || len(p.Missed) > 0 {
			t.Fatalf("page %d from %d to %d (%d bytes of text), missed %v; %d bytes had before", pages, p.From, p.Next, len(p.Text), p.Missed, got.Len())
		}
		got.WriteString(p.Text)
		if p.Complete {
			if out.State != "terminal" || out.Result == nil || pages != (size+pageBytes-1)/pageBytes {
				t.Fatalf("the last page (%d): %+v", pages, out)
			}
			break
		}
		res = s.call("wait", map[string]any{"handle": *out.Handle, "stdout_from": p.Next}, &out)
	}
	if got.String() != numbered(size) {
		t.Fatalf("the pages hold %d bytes, not the %d the action printed", got.Len(), size)
	}
	s.call("wait", map[string]any{"handle": *out.Handle, "stdout_from": 0}, &out)
	if p := out.Output.Stdout; !p.Complete || p.Next != size || len(p.Missed) != 1 || p.Missed[0] != (rangeOut{0, size}) ||
		!strings.Contains(p.Text, fmt.Sprintf("bytes 0–%d missed", size)) {
		t.Fatalf("once taken, the output is no longer held: %+v", p)
	}
}
