package view

import (
	"fmt"
	"strings"
	"time"

	"warrant/wire"
)

// Egress is what an action with an egress grant connected to through the
// broker's proxy (wire.Egress): the exact list it was granted, every
// connection it asked for counted (Total, Refused; Totals per granted
// entry, exact) and the first wire.MaxConnections listed (Unlisted
// counts the rest).
type Egress struct {
	Granted     []string           `json:"granted"`
	Total       uint64             `json:"total"`
	Refused     uint64             `json:"refused"`
	Unlisted    uint64             `json:"unlisted"`
	Totals      []EgressTotal      `json:"totals"`
	Connections []EgressConnection `json:"connections"`
}

// EgressTotal sums the connections to one granted entry.
type EgressTotal struct {
	Entry       string `json:"entry"`
	Connections uint64 `json:"connections"`
	UpBytes     uint64 `json:"up_bytes"`
	DownBytes   uint64 `json:"down_bytes"`
}

// EgressConnection is one connection the target asked the proxy for:
// Host and Port as the client named them (wire.EgressConnection); Address what the broker
// resolved and connected to (null when refused before that); SNI the
// server name the client's TLS hello carried (null when none); the
// bytes the proxy wrote to the upstream (up) and read from it (down);
// Reason why it was refused (null when allowed).
type EgressConnection struct {
	Host      string  `json:"host"`
	Port      uint16  `json:"port"`
	Address   *string `json:"address"`
	SNI       *string `json:"sni"`
	UpBytes   uint64  `json:"up_bytes"`
	DownBytes uint64  `json:"down_bytes"`
	Start     string  `json:"start"`
	End       string  `json:"end"`
	Allowed   bool    `json:"allowed"`
	Reason    *string `json:"reason"`
}

// egressOf is e for a person or an agent; nil for nil (no grant, or the
// action did not start).
func egressOf(e *wire.Egress) *Egress {
	if e == nil {
		return nil
	}
	out := &Egress{Granted: append([]string{}, e.Granted...), Total: e.Total, Refused: e.Refused,
		Unlisted: e.Total - min(e.Total, uint64(len(e.Connections))), Totals: []EgressTotal{}, Connections: []EgressConnection{}}
	for _, t := range e.Totals {
		out.Totals = append(out.Totals, EgressTotal{Entry: t.Entry, Connections: t.Connections, UpBytes: t.Up, DownBytes: t.Down})
	}
	for _, c := range e.Connections {
		out.Connections = append(out.Connections, EgressConnection{Host: c.Host, Port: c.Port, Address: Text(c.Address),
			SNI: Text(c.SNI), UpBytes: c.Up, DownBytes: c.Down, Start: Time(time.Unix(0, c.Start)), End: Time(time.Unix(0, c.End)),
			Allowed: c.Allowed, Reason: Text(c.Reason)})
	}
	return out
}

// line is the egress of a run in one line: how many connections went
// through the proxy, how many it refused, and per granted entry used its
// connections and bytes each way (the grant, when none was used).
func (e *Egress) line() string {
	var b strings.Builder
	switch e.Total {
	case 0:
		b.WriteString("egress: no connection through the proxy")
	case 1:
		b.WriteString("egress: 1 connection through the proxy")
	default:
		fmt.Fprintf(&b, "egress: %d connections through the proxy", e.Total)
	}
	if e.Refused > 0 {
		fmt.Fprintf(&b, " (%d refused)", e.Refused)
	}
	for _, t := range e.Totals {
		if t.Connections > 0 {
			fmt.Fprintf(&b, " · %s %d conn ↑%s ↓%s", Plain(t.Entry), t.Connections, size(t.UpBytes), size(t.DownBytes))
		}
	}
	if e.Total == 0 {
		b.WriteString(" (granted " + strings.Join(PlainAll(e.Granted), ", ") + ")")
	}
	return b.String()
}

// size is n bytes in binary units, one decimal past the first: "512 B",
// "1.2 KiB", "3.4 MiB".
func size(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1024, 0
	for v >= 1024 && unit < 5 {
		v, unit = v/1024, unit+1
	}
	return fmt.Sprintf("%.1f %s", v, []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}[unit])
}
