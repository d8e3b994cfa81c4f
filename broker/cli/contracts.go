package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warrant/broker/client"
	"warrant/broker/internal/contract"
	"warrant/broker/view"
	"warrant/wire"
)

// contractCommands are the subcommands of `broker contracts`: the shipped
// library of program contracts (docs/contracts.md), read from the binary,
// and the operator's grants of them (enable, revoke; list shows the
// usable ones beside each contract).
var contractCommands = map[string]subcommand{
	"list":   {"contracts list [--limit N] [--after CURSOR] [--json]", contractsList},
	"show":   {"contracts show NAME [--json]", contractsShow},
	"enable": {"contracts enable NAME [--uses N] [--ttl D] [--profile P] [--workspace DIR] [--executable PATH] [--json]", contractsEnable},
	"revoke": {"contracts revoke ID [--json]", contractsRevoke},
}

func runContracts(e *env, args []string) error { return e.runSub(contractCommands, args) }

// contractItem is a contract under the JSON convention.
type contractItem struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Executable  string `json:"executable"`
	Digest      string `json:"digest"` // hex SHA-256 of its canonical form
	// Enabled are its usable grants; null when no broker answered.
	Enabled []contractGrant `json:"enabled"`
}

func contractItemOf(c *contract.Contract) contractItem {
	return contractItem{Name: c.Name(), Description: c.Description(), Executable: c.Executable(), Digest: c.Digest()}
}

// contractGrant is one grant of a contract: a lease whose uses any argv
// the contract accepts may consume.
type contractGrant struct {
	ID         string  `json:"id"`
	Contract   string  `json:"contract"`
	Executable string  `json:"executable"`
	Profile    *string `json:"profile"`
	UsesLeft   uint32  `json:"uses_left"`
	Expires    string  `json:"expires"`
	State      string  `json:"state"`
	expires    int64
}

func contractGrantOf(l *wire.LeaseView, now time.Time) contractGrant {
	v := view.LeaseOf(l, now)
	return contractGrant{ID: l.ID, Contract: l.Contract, Executable: l.Executable, Profile: v.Profile,
		UsesLeft: l.UsesLeft, Expires: v.Expires, State: v.State, expires: l.ExpiresUnix}
}

// usableGrants is every usable contract grant the broker holds, by
// contract; nil when no broker answers.
func (e *env) usableGrants() map[string][]contractGrant {
	cl, err := client.Dial(e.state)
	if err != nil {
		return nil
	}
	defer cl.Close()
	out := map[string][]contractGrant{}
	now := time.Now()
	q := wire.List{Kind: wire.ListContractGrants}
	for range 64 { // at most 64 pages of grants
		l, err := cl.ListPage(q)
		if err != nil {
			return nil
		}
		for i := range l.Leases {
			if g := contractGrantOf(&l.Leases[i], now); g.State == "usable" {
				out[g.Contract] = append(out[g.Contract], g)
			}
		}
		if !l.Truncated || len(l.Leases) == 0 {
			break
		}
		q.After = l.Leases[len(l.Leases)-1].ID
	}
	return out
}

func contractsList(e *env, args []string) error {
	pf := e.pageFlags()
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	if err := pf.check(0); err != nil {
		return err
	}
	grants := e.usableGrants()
	var all []contractItem
	for _, name := range contract.Library() {
		c, err := contract.Builtin(name)
		if err != nil {
			return err
		}
		item := contractItemOf(c)
		if grants != nil {
			item.Enabled = append([]contractGrant{}, grants[name]...)
		}
		all = append(all, item)
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
		for _, g := range c.Enabled {
			fmt.Fprintf(e.stdout, "    enabled %s: %s, %d use(s) left, %s\n", g.ID, g.Executable, g.UsesLeft,
				expiry(time.Unix(g.expires, 0), time.Now()))
		}
	}
	if grants == nil {
		fmt.Fprintln(e.stdout, "(No broker answered: the grants enabled are not shown.)")
	}
	e.writeMore("contracts list", page.NextAfter)
	return nil
}

// contractsEnable grants a library contract for a workspace and profile:
// every argv it accepts may run, as many times as --uses, until --ttl.
func contractsEnable(e *env, args []string) error {
	uses := e.fs.Uint("uses", 20, "how many runs (`N`) the grant allows")
	ttl := e.fs.Duration("ttl", 8*time.Hour, "how long (`D`) the grant lasts")
	prof := e.fs.String("profile", "short", "the `PROFILE` the commands run under: short, standard or long")
	ws := e.fs.String("workspace", "", "the workspace root `DIR` (default: the current directory)")
	exe := e.fs.String("executable", "", "bind this executable (`PATH` or name) instead of the contract's own")
	pos, err := e.parse(args, 1)
	if err != nil {
		return err
	}
	c, err := contract.Builtin(pos[0])
	if err != nil {
		return usageError{err.Error()}
	}
	profile, err := wire.ParseEnum[wire.Profile](*prof)
	if err != nil {
		return usageError{fmt.Sprintf("--profile must be short, standard or long, not %q", *prof)}
	}
	if err := checkTerms(*uses, *ttl); err != nil {
		return err
	}
	if *ws == "" {
		if *ws, err = os.Getwd(); err != nil {
			return err
		}
	}
	if *ws, err = filepath.Abs(*ws); err != nil {
		return err
	}
	cl, err := e.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.EnableContract(&wire.ContractEnable{Workspace: *ws, Name: c.Name(), Uses: uint32(*uses),
		TTLSeconds: uint32(*ttl / time.Second), Profile: profile, Executable: *exe})
	if err != nil {
		return err
	}
	g := contractGrantOf(l, time.Now())
	if e.json {
		return e.printJSON("warrant.contracts.enable/v1", struct {
			Grant  contractGrant `json:"grant"`
			Digest string        `json:"digest"`
		}{g, c.Digest()})
	}
	fmt.Fprintf(e.stdout, "Enabled contract %s as %s for %s (%s, profile %s): %d use(s) until %s.\n%s\n",
		c.Name(), l.ID, *ws, l.Executable, profile, l.UsesLeft, time.Unix(l.ExpiresUnix, 0).Format(time.RFC3339),
		strings.TrimRight(c.Usage(), "\n"))
	return nil
}

// contractsRevoke ends a contract grant now.
func contractsRevoke(e *env, args []string) error {
	return revoke(e, args, "warrant.contracts.revoke/v1", "grant_id")
}

// contractShown is one contract in full: its grammar as the card shows
// it and its canonical form.
type contractShown struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Executable  string          `json:"executable"`
	Digest      string          `json:"digest"`
	Usage       string          `json:"usage"`
	Contract    json.RawMessage `json:"contract"`
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
		return e.printJSON("warrant.contracts.show/v1", contractShown{c.Name(), c.Description(), c.Executable(), c.Digest(), c.Usage(), c.Canonical()})
	}
	fmt.Fprintf(e.stdout, "%s: %s\nexecutable  %s\ndigest      sha256:%s\n\n%s\n", c.Name(), c.Description(), c.Executable(), c.Digest(),
		strings.TrimRight(c.Usage(), "\n"))
	return nil
}
