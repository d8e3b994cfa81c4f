package receipt

import (
	"time"

	"warrant/wire"
)

// Egress is what an action with an egress grant did with it (wire.Egress,
// broker/internal/egress): the exact list it was granted, every
// connection it asked the broker's proxy for counted (Total, Refused,
// and per granted entry Totals, exact), and the first
// wire.MaxConnections of them listed, allowed and refused alike, each
// with its times on the receipt clocks. Every receipt of an action with
// a grant has it (with nothing counted when the action did not start);
// receipts of actions without one, and those made before egress leases
// existed, have none.
type Egress struct {
	Granted     []string           `json:"granted"`
	Total       uint64             `json:"total"`
	Refused     uint64             `json:"refused"`
	Totals      []EgressTotal      `json:"totals,omitempty"`
	Connections []EgressConnection `json:"connections,omitempty"`
}

// EgressTotal sums the connections to one granted entry
// (wire.EgressTotal).
type EgressTotal struct {
	Entry       string `json:"entry"`
	Connections uint64 `json:"connections"`
	UpBytes     uint64 `json:"upBytes"`
	DownBytes   uint64 `json:"downBytes"`
}

// EgressConnection is one connection the target asked the proxy for
// (wire.EgressConnection): the destination as the client named it, the
// address the broker resolved and connected to (absent when refused
// before that), the TLS server name the client sent (absent when none),
// the bytes the proxy wrote to the upstream and read from it, and
// whether it was allowed, or why not.
type EgressConnection struct {
	Host      string `json:"host"`
	Port      uint16 `json:"port"`
	Address   string `json:"address,omitempty"`
	SNI       string `json:"sni,omitempty"`
	UpBytes   uint64 `json:"upBytes"`
	DownBytes uint64 `json:"downBytes"`
	Start     Time   `json:"start"`
	End       Time   `json:"end"`
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
}

// EgressOf mirrors e, each time placed on the receipt clocks by stamp;
// nil for nil.
func EgressOf(e *wire.Egress, stamp func(time.Time) Time) *Egress {
	if e == nil {
		return nil
	}
	out := &Egress{Granted: append([]string{}, e.Granted...), Total: e.Total, Refused: e.Refused}
	for _, t := range e.Totals {
		out.Totals = append(out.Totals, EgressTotal{Entry: t.Entry, Connections: t.Connections, UpBytes: t.Up, DownBytes: t.Down})
	}
	for _, c := range e.Connections {
		out.Connections = append(out.Connections, EgressConnection{Host: c.Host, Port: c.Port, Address: c.Address, SNI: c.SNI,
			UpBytes: c.Up, DownBytes: c.Down, Start: stamp(time.Unix(0, c.Start)), End: stamp(time.Unix(0, c.End)),
			Allowed: c.Allowed, Reason: c.Reason})
	}
	return out
}

// Wire is e as wire.Egress, whose Validate checks its bounds and counts.
func (e *Egress) Wire() *wire.Egress {
	out := &wire.Egress{Granted: e.Granted, Total: e.Total, Refused: e.Refused}
	for _, t := range e.Totals {
		out.Totals = append(out.Totals, wire.EgressTotal{Entry: t.Entry, Connections: t.Connections, Up: t.UpBytes, Down: t.DownBytes})
	}
	for _, c := range e.Connections {
		out.Connections = append(out.Connections, wire.EgressConnection{Host: c.Host, Port: c.Port, Address: c.Address, SNI: c.SNI,
			Up: c.UpBytes, Down: c.DownBytes, Start: c.Start.WallUnixNs, End: c.End.WallUnixNs, Allowed: c.Allowed, Reason: c.Reason})
	}
	return out
}

// validate checks e as wire.Egress.Validate does: its bounds and that
// its counts agree.
func (e *Egress) validate() error {
	if err := e.Wire().Validate(); err != nil {
		return errorf("%v", err)
	}
	return nil
}
