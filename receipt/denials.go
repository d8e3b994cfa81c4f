package receipt

import (
	"time"

	"warrant/wire"
)

// Denials is what the action's sandbox was seen to refuse (wire.Denials,
// broker/internal/denial): Sources names what watched it, Total counts
// every refused call they saw, Counts the same calls exactly by class
// (call, socket family, rule, source), and Records lists the first
// wire.MaxDenials kinds (a class and one object) as samples, with the
// count of each and when it was first seen. An action watched that
// refused nothing has Sources and a Total of 0; receipts made before
// refusals were observed have no Denials. The remedy a person could
// apply is not part of the record: it is advice, which broker/view
// derives from the rule.
type Denials struct {
	Sources []string      `json:"sources"`
	Total   uint64        `json:"total"`
	Counts  []DenialCount `json:"counts,omitempty"`
	Records []Denial      `json:"records,omitempty"`
}

// DenialCount is one class's exact count (wire.DenialCount).
type DenialCount struct {
	Effect wire.DenialEffect `json:"effect"`
	Call   string            `json:"call"`
	Family string            `json:"family,omitempty"`
	Rule   wire.DenialRule   `json:"rule"`
	Source wire.DenialSource `json:"source"`
	Count  uint64            `json:"count"`
}

// Denial is one kind of refused call (wire.Denial).
type Denial struct {
	Effect wire.DenialEffect `json:"effect"`
	Call   string            `json:"call"`
	Object string            `json:"object"`
	Family string            `json:"family,omitempty"`
	Rule   wire.DenialRule   `json:"rule"`
	Source wire.DenialSource `json:"source"`
	Count  uint64            `json:"count"`
	First  Time              `json:"first"`
}

// DenialsOf mirrors d, each first time placed on the receipt clocks by
// stamp; nil for nil.
func DenialsOf(d *wire.Denials, stamp func(time.Time) Time) *Denials {
	if d == nil {
		return nil
	}
	out := &Denials{Sources: append([]string{}, d.Sources...), Total: d.Total}
	for _, c := range d.Counts {
		out.Counts = append(out.Counts, DenialCount(c))
	}
	for _, r := range d.Records {
		out.Records = append(out.Records, Denial{Effect: r.Effect, Call: r.Call, Object: r.Object, Family: r.Family,
			Rule: r.Rule, Source: r.Source, Count: r.Count, First: stamp(time.Unix(0, r.FirstUnixNs))})
	}
	return out
}

// Wire is d as wire.Denials, whose Validate checks its bounds and counts.
func (d *Denials) Wire() *wire.Denials {
	out := &wire.Denials{Sources: d.Sources, Total: d.Total}
	for _, c := range d.Counts {
		out.Counts = append(out.Counts, wire.DenialCount(c))
	}
	for _, r := range d.Records {
		out.Records = append(out.Records, wire.Denial{Effect: r.Effect, Call: r.Call, Object: r.Object, Family: r.Family,
			Rule: r.Rule, Source: r.Source, Count: r.Count, FirstUnixNs: r.First.WallUnixNs})
	}
	return out
}
