package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"warrant/broker/internal/contract"
	"warrant/broker/view"
)

// contractCommands are the subcommands of `broker contracts`: the shipped
// library of program contracts (docs/contracts.md), read from the binary.
// Matching a submit against a contract is not wired yet: these show what
// each grammar accepts, and nothing here grants anything.
var contractCommands = map[string]subcommand{
	"list": {"contracts list [--limit N] [--after CURSOR] [--json]", contractsList},
	"show": {"contracts show NAME [--json]", contractsShow},
}

func runContracts(e *env, args []string) error { return e.runSub(contractCommands, args) }

// contractItem is a contract under the JSON convention.
type contractItem struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Executable  string `json:"executable"`
	Digest      string `json:"digest"` // hex SHA-256 of its canonical form
}

func contractItemOf(c *contract.Contract) contractItem {
	return contractItem{Name: c.Name(), Description: c.Description(), Executable: c.Executable(), Digest: c.Digest()}
}

func contractsList(e *env, args []string) error {
	pf := e.pageFlags()
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	if err := pf.check(0); err != nil {
		return err
	}
	var all []contractItem
	for _, name := range contract.Library() {
		c, err := contract.Builtin(name)
		if err != nil {
			return err
		}
		all = append(all, contractItemOf(c))
	}
	page, err := pageOf(all, pf, func(c contractItem) string { return c.Name })
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON("warrant.contracts.list/v1", view.List[contractItem]{Items: page.Items, Truncated: page.Truncated, NextAfter: page.NextAfter})
	}
	for _, c := range page.Items {
		fmt.Fprintf(e.stdout, "%-12s %-8s sha256:%s  %s\n", c.Name, c.Executable, c.Digest[:12], c.Description)
	}
	e.writeMore("contracts list", page.NextAfter)
	return nil
}

// contractShown is one contract in full: its grammar as the card shows
// it and its canonical form.
type contractShown struct {
	contractItem
	Usage    string          `json:"usage"`
	Contract json.RawMessage `json:"contract"`
}

func contractsShow(e *env, args []string) error {
	pos, err := e.parse(args, 1)
	if err != nil {
		return err
	}
	c, err := contract.Builtin(pos[0])
	if err != nil {
		return usageError{err.Error()}
	}
	if e.json {
		return e.printJSON("warrant.contracts.show/v1", contractShown{contractItemOf(c), c.Usage(), c.Canonical()})
	}
	fmt.Fprintf(e.stdout, "%s: %s\nexecutable  %s\ndigest      sha256:%s\n\n%s\n", c.Name(), c.Description(), c.Executable(), c.Digest(),
		strings.TrimRight(c.Usage(), "\n"))
	return nil
}
