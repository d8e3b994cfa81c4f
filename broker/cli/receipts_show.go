package cli

import (
	"fmt"

	"warrant/broker/view"
)

func receiptsShow(e *env, args []string) error {
	l, pos, err := e.readLog(args, 1)
	if err != nil {
		return err
	}
	s := view.FindReceipt(l.Entries, l.Verify, pos[0])
	if s == nil {
		return fmt.Errorf("no receipt has id or action %q", pos[0])
	}
	if e.json {
		return e.printJSON("warrant.receipts.show/v1", shownOf(s))
	}
	s.Write(e.stdout)
	return nil
}
