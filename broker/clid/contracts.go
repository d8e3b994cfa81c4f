package clid

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"warrant/broker/cli"
	"warrant/broker/client"
	"warrant/broker/internal/contract"
	"warrant/broker/view"
	"warrant/wire"
)

// contractCommands are the subcommands of `broker contracts`: the shipped
// library of program contracts (docs/contracts.md), read from the binary,
// the operator's grants of them (enable, revoke; list shows the usable
// ones beside each contract), and the contracts that would cover a
// pending approval request (offer).
var contractCommands = map[string]cli.Subcommand{
	"list":   {Synopsis: "contracts list [--limit N] [--after CURSOR] [--json]", Run: contractsList},
	"show":   {Synopsis: "contracts show NAME [--json]", Run: contractsShow},
	"enable": {Synopsis: "contracts enable NAME [--request ID] [--uses N] [--ttl D] [--profile P] [--workspace DIR] [--executable PATH] [--json]", Run: contractsEnable},
	"offer":  {Synopsis: "contracts offer ID [--json]", Run: contractsOffer},
	"revoke": {Synopsis: "contracts revoke ID [--json]", Run: contractsRevoke},
}

func runContracts(e *cli.Env, args []string) error { return e.RunSub(contractCommands, args) }

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
func usableGrants(e *cli.Env) map[string][]contractGrant {
	cl, err := client.Dial(e.State)
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

func contractsList(e *cli.Env, args []string) error {
	pf := e.PageFlags()
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	if err := pf.Check(0); err != nil {
		return err
	}
	grants := usableGrants(e)
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
	page, err := cli.PageOf(all, pf, func(c contractItem) string { return c.Name })
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.contracts.list/v1", view.List[contractItem]{Items: page.Items, Truncated: page.Truncated, NextAfter: page.NextAfter})
	}
	for _, c := range page.Items {
		fmt.Fprintf(e.Stdout, "%-12s %-8s sha256:%s  %s\n", c.Name, c.Executable, c.Digest[:12], c.Description)
		for _, g := range c.Enabled {
			fmt.Fprintf(e.Stdout, "    enabled %s: %s, %d use(s) left, %s\n", g.ID, g.Executable, g.UsesLeft,
				cli.Expiry(time.Unix(g.expires, 0), time.Now()))
		}
	}
	if grants == nil {
		fmt.Fprintln(e.Stdout, "(No broker answered: the grants enabled are not shown.)")
	}
	e.WriteMore("contracts list", page.NextAfter)
	return nil
}

// contractsEnable grants a library contract for a workspace and profile:
// every argv it accepts may run, as many times as --uses, until --ttl.
// With --request, the workspace, profile and executable are the pending
// request's (those flags, given as well, must agree with it; the file it
// runs must be the contract's program, or the one --executable names),
// and the grant settles the request and the oldest other pending ones
// of the workspace it covers, as many as it has uses in all: their
// commands run under the grant. It says the file the grant binds, how
// many requests it settled, and when that took all its uses.
func contractsEnable(e *cli.Env, args []string) error {
	uses := e.Flags.Uint("uses", cli.EnableUses, "how many runs (`N`) the grant allows")
	ttl := e.Flags.Duration("ttl", cli.EnableTTL, "how long (`D`) the grant lasts")
	prof := e.Flags.String("profile", "short", "the `PROFILE` the commands run under: short, standard or long")
	ws := e.Flags.String("workspace", "", "the workspace root `DIR` (default: the current directory)")
	exe := e.Flags.String("executable", "", "bind this executable (`PATH` or name) instead of the contract's own; with --request, the very file the request runs")
	request := e.Flags.String("request", "", "enable it for pending approval request `ID`, which it settles with the others it covers; the workspace, profile and executable are the request's")
	c, err := builtinArg(e, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	e.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	m := &wire.ContractEnable{Name: c.Name(), Uses: uint32(*uses), TTLSeconds: uint32(*ttl / time.Second), Executable: *exe, Request: *request}
	if err := cli.CheckTerms(*uses, *ttl); err != nil {
		return err
	}
	if *request == "" || set["profile"] {
		if m.Profile, err = wire.ParseEnum[wire.Profile](*prof); err != nil {
			return cli.UsageError{Msg: fmt.Sprintf("--profile must be short, standard or long, not %q", *prof)}
		}
	}
	if *request == "" || set["workspace"] {
		if *ws == "" {
			if *ws, err = os.Getwd(); err != nil {
				return err
			}
		}
		if m.Workspace, err = filepath.Abs(*ws); err != nil {
			return err
		}
	}
	cl, err := e.Dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	l, err := cl.EnableContract(m)
	if err != nil {
		return err
	}
	g := contractGrantOf(l, time.Now())
	if e.JSON {
		return e.PrintJSON("warrant.contracts.enable/v1", struct {
			Grant   contractGrant `json:"grant"`
			Digest  string        `json:"digest"`
			Request *string       `json:"request"`
			Program *programShown `json:"program"`
			Settled uint32        `json:"settled"`
		}{g, c.Digest(), view.Text(*request), programOf(l.Program), l.Settled})
	}
	where := "the request " + *request
	if *request == "" {
		where = m.Workspace
	}
	fmt.Fprintf(e.Stdout, "Enabled contract %s as %s for %s (%s, profile %s): %d use(s) until %s.\n",
		c.Name(), l.ID, view.Plain(where), view.Plain(l.Executable), l.Profile, l.UsesLeft, time.Unix(l.ExpiresUnix, 0).Format(time.RFC3339))
	if p := programOf(l.Program); p != nil {
		fmt.Fprintf(e.Stdout, "It binds %s.\n", p)
	}
	switch {
	case *request != "" && l.Settled > 1:
		fmt.Fprintf(e.Stdout, "Request %s and %d other pending request(s) it covers are approved under it: their commands run when submitted again.\n",
			*request, l.Settled-1)
	case *request != "":
		fmt.Fprintf(e.Stdout, "Request %s is approved under it: its command runs when submitted again.\n", *request)
	}
	if *request != "" && l.Settled >= l.UsesLeft { // a grant settles no more requests than it has uses
		fmt.Fprintf(e.Stdout, "That takes all its %d use(s): any other pending request it covers stays pending (`broker approvals` lists them).\n",
			l.UsesLeft)
	}
	fmt.Fprintln(e.Stdout, strings.TrimRight(c.Usage(), "\n"))
	return nil
}

// programShown is the executable file a grant binds, under the JSON
// convention: its path and SHA-256 in hex.
type programShown struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// programOf is p shown; nil for none (a broker that did not say it).
func programOf(p *wire.ProgramFile) *programShown {
	if p == nil {
		return nil
	}
	return &programShown{Path: p.Path, SHA256: hex.EncodeToString(p.SHA256)}
}

// String is the file as a sentence names it: its path (view.Plain) and the
// start of its digest.
func (p *programShown) String() string {
	return view.Plain(p.Path) + " (sha256 " + p.SHA256[:min(12, len(p.SHA256))] + "…)"
}

// contractOffered is one contract offered for a request under the JSON
// convention.
type contractOffered struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Usage       string        `json:"usage"`
	Covers      []string      `json:"covers"`
	Program     *programShown `json:"program"`
}

// contractsOffer lists the library contracts that would cover pending
// request ID: each with its grammar and the command lines it accepts,
// the request's first, then the earlier requests of its executable in
// its workspace; the one covering most first.
func contractsOffer(e *cli.Env, args []string) error {
	cl, pos, err := e.ConnectArgs(args, 1)
	if err != nil {
		return err
	}
	defer cl.Close()
	offers, err := cl.ContractOffer(pos[0])
	if err != nil {
		return err
	}
	if e.JSON {
		out := []contractOffered{}
		for _, o := range offers {
			out = append(out, contractOffered{o.Name, o.Description, o.Usage, o.Covers, programOf(&o.Program)})
		}
		return e.PrintJSON("warrant.contracts.offer/v1", struct {
			Request string            `json:"request"`
			Offers  []contractOffered `json:"offers"`
		}{pos[0], out})
	}
	if len(offers) == 0 {
		fmt.Fprintf(e.Stdout, "No contract of the library covers request %s (none is for the file it runs and accepts its arguments); "+
			"`broker approve %s` grants exactly its command.\n", pos[0], pos[0])
		return nil
	}
	for i, o := range offers {
		if i > 0 {
			fmt.Fprintln(e.Stdout)
		}
		fmt.Fprintf(e.Stdout, "%s: %s\n%s\nbinds %s\ncovers %d command(s) asked for here:\n", o.Name, o.Description, o.Usage,
			programOf(&o.Program), len(o.Covers))
		for _, line := range o.Covers {
			fmt.Fprintf(e.Stdout, "    %s\n", line)
		}
		fmt.Fprintf(e.Stdout, "enable it for this request: broker contracts enable %s --request %s\n", o.Name, pos[0])
	}
	return nil
}

// contractsRevoke ends a contract grant now; a plain lease's id is
// refused (`broker revoke` ends a lease).
func contractsRevoke(e *cli.Env, args []string) error {
	return cli.Revoke(e, args, (*client.Client).RevokeContract, "warrant.contracts.revoke/v1", "grant_id", "contract grant ")
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

func contractsShow(e *cli.Env, args []string) error {
	c, err := builtinArg(e, args)
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.contracts.show/v1", contractShown{c.Name(), c.Description(), c.Executable(), c.Digest(), c.Usage(), c.Canonical()})
	}
	fmt.Fprintf(e.Stdout, "%s: %s\nexecutable  %s\ndigest      sha256:%s\n\n%s\n", c.Name(), c.Description(), c.Executable(), c.Digest(),
		strings.TrimRight(c.Usage(), "\n"))
	return nil
}

// builtinArg parses args (one argument, after the command's flags) and
// returns the shipped contract it names.
func builtinArg(e *cli.Env, args []string) (*contract.Contract, error) {
	pos, err := e.Parse(args, 1)
	if err != nil {
		return nil, err
	}
	c, err := contract.Builtin(pos[0])
	if err != nil {
		return nil, cli.UsageError{Msg: err.Error()}
	}
	return c, nil
}
