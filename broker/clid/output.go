package clid

import (
	"fmt"
	"io"
	"warrant/broker/cli"

	"warrant/broker/view/receiptview"
	"warrant/wire"
)

// outputJSON is the object `broker output --json` prints.
type outputJSON struct {
	Handle    string                     `json:"handle"`
	ReceiptID string                     `json:"receipt_id"`
	Streams   []receiptview.RetainedText `json:"streams"`
}

// runOutput prints the retained head and tail of an action's streams from
// its verified receipt, with the omission marker between them: raw
// (redacted) bytes, stdout's to stdout and stderr's to stderr, or the one
// stream asked for to stdout; with --json, their projection and counts.
// With --from, the one stream's bytes from that offset on (outputFrom).
func runOutput(e *cli.Env, args []string) error {
	var stream string
	var from offsetFlag
	e.Flags.StringVar(&stream, "stream", "", "stdout or stderr (default: both)")
	e.Flags.Var(&from, "from", "print --stream's redacted bytes from `OFFSET` on: what the broker still holds (the bytes a follower missed, until 10 minutes after the end), else what the receipt retained")
	l, pos, err := readLog(e, args, 1)
	if err != nil {
		return err
	}
	if stream != "" && stream != "stdout" && stream != "stderr" {
		return cli.UsageError{Msg: fmt.Sprintf("--stream must be stdout or stderr, not %q", stream)}
	}
	if from.set {
		switch {
		case stream == "":
			return cli.UsageError{Msg: "--from needs --stream stdout or --stream stderr"}
		case e.JSON:
			return cli.UsageError{Msg: "--from prints the stream's bytes; it has no --json"}
		}
		s, _ := wire.ParseEnum[wire.OutputStream](stream)
		return outputFrom(e, l, pos[0], s, from.n)
	}
	s := receiptview.FindReceipt(l.Entries, l.Verify, pos[0])
	if s == nil {
		return fmt.Errorf("no receipt has id or action %q (an action's output is kept in its receipt once it has ended: see `broker status %s`)", pos[0], pos[0])
	}
	streams, err := s.Output()
	if err != nil {
		return err
	}
	out := outputJSON{Handle: s.Receipt.Action, ReceiptID: s.Receipt.ID, Streams: []receiptview.RetainedText{}}
	for i := range streams {
		r := &streams[i]
		name := r.Captured.Evidence.Stream.String()
		if stream != "" && name != stream {
			continue
		}
		if e.JSON {
			out.Streams = append(out.Streams, r.Text())
			continue
		}
		w := e.Stdout
		if stream == "" && name == "stderr" {
			w = e.Stderr
		}
		writeRetained(w, r)
		ev := &r.Captured.Evidence
		fmt.Fprintf(e.Stderr, "warrant: %s of %s: head %d + tail %d of %d bytes retained (receipt %s, verified)\n",
			name, s.Receipt.Action, len(r.Captured.Head), len(r.Captured.Tail), ev.RedactedBytes, s.Receipt.ID)
	}
	if e.JSON {
		return e.PrintJSON("warrant.output/v1", out)
	}
	return nil
}

// writeRetained writes r's head, its marker and its tail.
func writeRetained(w io.Writer, r *receiptview.Retained) {
	w.Write(r.Captured.Head)
	io.WriteString(w, r.Marker())
	w.Write(r.Captured.Tail)
}
