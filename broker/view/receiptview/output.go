package receiptview

import (
	"fmt"
	"math"

	"warrant/broker/view"
	"warrant/receipt"
)

// Retained is the retained output of one stream of a receipt: the head
// and tail the broker kept of its redacted stream, which `broker output`
// shows with the omission marker between them.
type Retained struct {
	Captured receipt.Captured
	// Omitted counts the bytes between head and tail: redacted bytes the
	// receipt left out, and raw bytes a failed redactor withheld.
	Omitted uint64
}

// Marker is the omission marker between head and tail, or "" when the
// receipt kept the whole stream.
func (r *Retained) Marker() string {
	if r.Omitted == 0 {
		return ""
	}
	return receipt.OmissionMarker(r.Omitted, r.Captured.Evidence.Truncation)
}

// Output splits the shown receipt's retained body into its streams, in
// the receipt's order. It refuses a receipt that did not verify (its
// body, or the digests it is checked against, cannot be trusted) and one
// whose body retention deleted.
func (s *Shown) Output() ([]Retained, error) {
	switch {
	case !s.Verified:
		p := s.Problems[0]
		return nil, fmt.Errorf("receipt %s does not verify (%s: %s); its output is not shown: see `broker receipts verify`",
			s.Receipt.ID, p.Kind, p.Detail)
	case s.Pruned != nil:
		return nil, fmt.Errorf("the retained output of receipt %s was deleted under the retention policy %q (deletion record #%d)",
			s.Receipt.ID, s.Pruned.Policy, s.Pruned.Record)
	}
	body := s.entry.Body
	var out []Retained
	for _, ev := range s.Receipt.Streams {
		head, tail := ev.Head.End-ev.Head.Start, ev.Tail.End-ev.Tail.Start
		if uint64(len(body)) < head+tail { // Verify checked the sizes: a broken invariant
			return nil, fmt.Errorf("receipt %s: its body is shorter than its streams' retained bytes", s.Receipt.ID)
		}
		out = append(out, Retained{
			Captured: receipt.Captured{Evidence: ev, Head: body[:head], Tail: body[head : head+tail]},
			Omitted:  ev.Tail.Start - ev.Head.End + ev.WithheldBytes,
		})
		body = body[head+tail:]
	}
	return out, nil
}

// RetainedText is one stream's retained output as `broker output --json`
// prints it: the whole retained head and tail, projected as the agent's
// text is (receipt.Project, with no bound on characters), and its counts.
type RetainedText struct {
	Stream            string  `json:"stream"`
	ObservedBytes     uint64  `json:"observed_bytes"`
	RedactedBytes     uint64  `json:"redacted_bytes"`
	RetainedHeadBytes uint64  `json:"retained_head_bytes"`
	RetainedTailBytes uint64  `json:"retained_tail_bytes"`
	OmittedBytes      uint64  `json:"omitted_bytes"`
	Truncation        *string `json:"truncation"` // null when nothing was left out
	Text              string  `json:"text"`
}

// Text is r as RetainedText.
func (r *Retained) Text() RetainedText {
	ev := &r.Captured.Evidence
	var why *string
	if ev.Truncation != 0 {
		why = view.Text(ev.Truncation.String())
	}
	return RetainedText{Stream: ev.Stream.String(), ObservedBytes: ev.ObservedBytes, RedactedBytes: ev.RedactedBytes,
		RetainedHeadBytes: uint64(len(r.Captured.Head)), RetainedTailBytes: uint64(len(r.Captured.Tail)),
		OmittedBytes: r.Omitted, Truncation: why, Text: receipt.Project(&r.Captured, math.MaxInt/2).Text}
}
