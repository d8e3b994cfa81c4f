package mcp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"warrant/receipt"
	"warrant/wire"
)

// pageBytes bounds one page of one stream: bytes of the redacted stream.
const pageBytes = 32 << 10

// outputFrom is where run and wait page the output from: an offset in
// each redacted stream, or nil for a stream not paged.
type outputFrom struct {
	StdoutFrom *uint64 `json:"stdout_from,omitempty" jsonschema:"page stdout's redacted bytes from this offset (0: the first byte): the result's output.stdout holds the next page and where the one after starts"`
	StderrFrom *uint64 `json:"stderr_from,omitempty" jsonschema:"the same for stderr"`
}

func (f outputFrom) paged() bool { return f.StdoutFrom != nil || f.StderrFrom != nil }

// offsetSchema makes an offset a plain integer, 0 or more.
func offsetSchema(s *jsonschema.Schema) {
	s.Types, s.Type = nil, "integer"
	s.Minimum, s.Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(float64(math.MaxInt64))
}

// outputOut is the page of each stream asked for.
type outputOut struct {
	Stdout *pageOut `json:"stdout" jsonschema:"null unless stdout_from was given"`
	Stderr *pageOut `json:"stderr" jsonschema:"null unless stderr_from was given"`
}

// pageOut is one page of one stream.
type pageOut struct {
	From     uint64     `json:"from" jsonschema:"the offset in the redacted stream the page starts at"`
	Next     uint64     `json:"next" jsonschema:"where the next page starts: pass it as stdout_from (stderr_from) to wait"`
	Text     string     `json:"text" jsonschema:"the bytes from..next as text (invalid UTF-8 replaced, control characters escaped), with a marker line where a missed range is"`
	Missed   []rangeOut `json:"missed" jsonschema:"ranges of from..next the broker no longer held, so the page lacks them (the receipt keeps the stream's head and tail); empty when the page is whole"`
	Complete bool       `json:"complete" jsonschema:"the action ended and next is the end of the stream: there is no next page"`
}

// rangeOut is the byte range [from, to) of a redacted stream.
type rangeOut struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// streamPage collects one stream's page from followed chunks: data, and
// the ranges missed between.
type streamPage struct {
	from, at uint64
	data     int        // bytes of data in parts
	parts    [][]byte   // data, or nil where missed[i] is
	missed   []rangeOut // in order
}

// take adds what c holds past the page's offset, at most pageBytes of
// data in all.
func (p *streamPage) take(c *wire.OutputChunk) {
	end := c.Offset + c.NotStreamed + uint64(len(c.Data))
	if c.Offset > p.at { // never sent: the broker sends gaps, but be sure
		p.miss(p.at, c.Offset)
	}
	if end <= p.at {
		return // a resumed stream starts where the last one stopped
	}
	from := max(c.Offset, p.at)
	if c.NotStreamed > 0 {
		p.miss(from, end)
		return
	}
	d := c.Data[from-c.Offset:]
	d = d[:min(len(d), pageBytes-p.data)]
	if n := len(p.parts); n > 0 && p.parts[n-1] != nil {
		p.parts[n-1] = append(p.parts[n-1], d...)
	} else {
		p.parts = append(p.parts, append([]byte(nil), d...))
	}
	p.data += len(d)
	p.at += uint64(len(d))
}

func (p *streamPage) miss(from, to uint64) {
	if n := len(p.parts); n > 0 && p.parts[n-1] == nil {
		p.missed[len(p.missed)-1].To = to
	} else {
		p.parts = append(p.parts, nil)
		p.missed = append(p.missed, rangeOut{from, to})
	}
	p.at = to
}

// out renders the page; ended says the action is over. A page that is
// not the last never ends inside a UTF-8 sequence: the sequence starts
// the next page.
func (p *streamPage) out(total uint64, ended bool) *pageOut {
	complete := ended && p.at >= total
	if n := len(p.parts); !complete && n > 0 && p.parts[n-1] != nil {
		last := p.parts[n-1]
		i := len(last) - 1
		for i > 0 && len(last)-i < utf8.UTFMax && !utf8.RuneStart(last[i]) {
			i--
		}
		if !utf8.FullRune(last[i:]) {
			p.at -= uint64(len(last) - i)
			p.parts[n-1] = last[:i]
		}
	}
	var text strings.Builder
	gap := 0
	for _, part := range p.parts {
		if part == nil {
			m := p.missed[gap]
			gap++
			fmt.Fprintf(&text, "\n[… bytes %d–%d missed: no longer held …]\n", m.From, m.To)
			continue
		}
		// Project renders bytes as the agent's stream text is rendered.
		text.WriteString(receipt.Project(&receipt.Captured{Evidence: receipt.StreamEvidence{RedactedBytes: uint64(len(part))}, Head: part}, math.MaxInt32).Text)
	}
	return &pageOut{From: p.from, Next: p.at, Text: text.String(), Missed: append([]rangeOut{}, p.missed...), Complete: complete}
}

// page follows handle from the offsets in from, a page of at most
// pageBytes of each stream (the broker stops at it: what is not sent
// stays held for the next page), until a page fills, the action ends or
// the budget from start runs out, notifying progress at each heartbeat;
// the result is the action's as follow's, with the pages.
func (c *conn) page(ctx context.Context, p *progress, handle string, from outputFrom, start time.Time, budget time.Duration) (*actionOut, string, error) {
	var pages [2]*streamPage
	f := &wire.Follow{Handle: handle, Limit: pageBytes}
	if from.StdoutFrom != nil {
		pages[0] = &streamPage{from: *from.StdoutFrom, at: *from.StdoutFrom}
		f.StdoutFrom = pages[0].at
	} else {
		f.Stream = wire.Stderr
	}
	if from.StderrFrom != nil {
		pages[1] = &streamPage{from: *from.StderrFrom, at: *from.StderrFrom}
		f.StderrFrom = pages[1].at
	} else {
		f.Stream = wire.Stdout
	}
	fctx, stop := context.WithDeadline(ctx, start.Add(budget))
	defer stop()
	st, err := c.cfg.Agent.Follow(fctx, f, func(ch *wire.OutputChunk) {
		if ch.Stream == 0 {
			p.running(ctx, handle, wire.StateRunning)
		} else if pg := pages[ch.Stream-1]; pg != nil {
			pg.take(ch)
		}
	})
	var we *wire.Error
	switch {
	case errors.As(err, &we), err != nil && fctx.Err() == nil: // refused, or the connection failed
		return c.lost(handle, err, start)
	case err != nil: // the budget ran out: where is the action?
		if st, err = c.cfg.Agent.Query(handle); err != nil {
			return c.lost(handle, err, start)
		}
	}
	full := false
	for _, pg := range pages {
		full = full || (pg != nil && pg.data >= pageBytes)
	}
	var o *actionOut
	var text string
	if ended := st.State == wire.StateTerminal || st.State == wire.StateUnknown; ended && st.Result != nil {
		o, text, err = c.outcome(handle, st, st.State, start)
	} else {
		o, text, err = c.outcome(handle, nil, st.State, start)
		o.WaitTimeout = !full
	}
	if err != nil {
		return o, text, err
	}
	var totals [2]uint64
	if r := st.Result; r != nil {
		totals = [2]uint64{r.Stdout.RedactedBytes, r.Stderr.RedactedBytes}
	}
	o.Output = &outputOut{}
	more := false
	for k, pg := range pages {
		if pg == nil {
			continue
		}
		po := pg.out(totals[k], o.Result != nil)
		if k == 0 {
			o.Output.Stdout = po
		} else {
			o.Output.Stderr = po
		}
		more = more || !po.Complete
	}
	if more {
		text += "\nMore output follows: call wait with this handle and output's next offsets as stdout_from and stderr_from."
	}
	return o, text, nil
}
