package receipt

import (
	"bufio"
	"fmt"
	"io"
)

// ExportDSSEJSONL writes the log as dsse-jsonl: one DSSE envelope per
// line, in log order, exactly as stored and signed. Any DSSE verifier
// with the broker's public key can check each line on its own; bodies are
// not exported (they are not signed, only their digests are).
func ExportDSSEJSONL(w io.Writer, entries []Entry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		bw.Write(e.Envelope)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export receipts: %w", err)
	}
	return nil
}
