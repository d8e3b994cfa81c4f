package receiptview

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"warrant/broker/view"
	"warrant/receipt"
	"warrant/wire"
)

// writeReceiptEgress is the receipt's record of egress, for receipts
// show: the grant, the totals, every listed connection, and how many
// more were counted but not listed.
func writeReceiptEgress(w io.Writer, e *receipt.Egress) {
	if e == nil {
		return
	}
	fmt.Fprintf(w, "Egress    granted %s\n", strings.Join(view.PlainAll(e.Granted), ", "))
	fmt.Fprintf(w, "          %d connection(s) through the proxy, %d refused\n", e.Total, e.Refused)
	for _, t := range e.Totals {
		fmt.Fprintf(w, "          %s: %d connection(s), %d bytes up, %d bytes down\n", view.Plain(t.Entry), t.Connections, t.UpBytes, t.DownBytes)
	}
	for _, c := range e.Connections {
		fmt.Fprintf(w, "          %s\n", connectionLine(&c))
	}
	if n := uint64(len(e.Connections)); e.Total > n {
		fmt.Fprintf(w, "          and %d more connection(s) past the first %d, counted above but not listed\n", e.Total-n, wire.MaxConnections)
	}
}

// connectionLine is one connection of a receipt on one line.
func connectionLine(c *receipt.EgressConnection) string {
	dest := view.Plain(c.Host) + ":" + strconv.FormatUint(uint64(c.Port), 10)
	var parts []string
	if c.Address != "" {
		parts = append(parts, "address "+view.Plain(c.Address))
	}
	if c.SNI != "" {
		parts = append(parts, "SNI "+view.Plain(c.SNI))
	}
	parts = append(parts, fmt.Sprintf("%d bytes up, %d down", c.UpBytes, c.DownBytes),
		fmt.Sprintf("%s for %s", Wall(c.Start), time.Duration(c.End.MonoNs-c.Start.MonoNs)))
	verdict := "allowed"
	if !c.Allowed {
		verdict = "REFUSED: " + view.Plain(c.Reason)
	}
	return fmt.Sprintf("%s %s (%s)", dest, verdict, strings.Join(parts, ", "))
}
