package clid

import (
	"fmt"
	"warrant/broker/cli"

	"warrant/broker/view/receiptview"
)

func receiptsShow(e *cli.Env, args []string) error {
	l, pos, err := readLog(e, args, 1)
	if err != nil {
		return err
	}
	s := receiptview.FindReceipt(l.Entries, l.Verify, pos[0])
	if s == nil {
		return fmt.Errorf("no receipt has id or action %q", pos[0])
	}
	if e.JSON {
		return e.PrintJSON("warrant.receipts.show/v1", shownOf(s))
	}
	s.Write(e.Stdout)
	return nil
}
