package clid

import (
	"fmt"
	"strconv"
	"time"
	"warrant/broker/cli"

	"warrant/broker"
	"warrant/broker/view"
)

// cacheCommands are the subcommands of `broker caches`: list reads the
// state directory without the lock, beside a running broker; prune needs
// the directory to itself.
var cacheCommands = map[string]cli.Subcommand{
	"list":  {Synopsis: "caches list [--json]", Run: cachesList},
	"prune": {Synopsis: "caches prune --older-than D|--all [--json]", Run: cachesPrune},
}

func runCaches(e *cli.Env, args []string) error { return e.RunSub(cacheCommands, args) }

func cachesList(e *cli.Env, args []string) error {
	pf := e.PageFlags()
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	if err := pf.Check(0); err != nil {
		return err
	}
	list, err := broker.ListCaches(e.State)
	if err != nil {
		return err
	}
	page, err := cli.PageOf(list, pf, func(c broker.CacheInfo) string { return c.Key })
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.caches.list/v1", view.List[cache]{Items: cachesOf(page.Items),
			Truncated: page.Truncated, NextAfter: page.NextAfter})
	}
	if len(list) == 0 {
		fmt.Fprintln(e.Stdout, "No workspace caches.")
	}
	for _, c := range page.Items {
		writeCache(e, c)
	}
	e.WriteMore("caches list", page.NextAfter)
	return nil
}

// cache is one workspace cache under the JSON convention; the workspace,
// its dev and ino are null when unknown, problem when none.
type cache struct {
	Key       string  `json:"key"`
	Dir       string  `json:"dir"`
	Workspace *string `json:"workspace"`
	Dev       *uint64 `json:"dev"`
	Ino       *uint64 `json:"ino"`
	LastUse   string  `json:"last_use"`
	Bytes     int64   `json:"bytes"`
	Files     int64   `json:"files"`
	Problem   *string `json:"problem"`
}

func cachesOf(list []broker.CacheInfo) []cache {
	out := make([]cache, len(list))
	for i, c := range list {
		out[i] = cache{Key: c.Key, Dir: c.Dir, Workspace: view.Text(c.Workspace), LastUse: view.Time(c.LastUse),
			Bytes: c.Bytes, Files: c.Files, Problem: view.Text(c.Problem)}
		if c.Workspace != "" {
			out[i].Dev, out[i].Ino = &c.Dev, &c.Ino
		}
	}
	return out
}

func writeCache(e *cli.Env, c broker.CacheInfo) {
	ws := "workspace unknown"
	if c.Workspace != "" {
		ws = fmt.Sprintf("workspace %s (dev %d, ino %d)", strconv.Quote(c.Workspace), c.Dev, c.Ino)
	}
	fmt.Fprintf(e.Stdout, "%s  %s in %d file(s)  last used %s  %s\n    %s\n",
		c.Key, humanBytes(c.Bytes), c.Files, c.LastUse.UTC().Format(time.RFC3339), ws, c.Dir)
	if c.Problem != "" {
		fmt.Fprintf(e.Stdout, "    (%s)\n", c.Problem)
	}
}

func cachesPrune(e *cli.Env, args []string) error {
	older := e.Flags.String("older-than", "", "remove the caches last used longer ago than this (e.g. 720h or 30d)")
	all := e.Flags.Bool("all", false, "remove every cache")
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	if *all == (*older != "") {
		return cli.UsageError{Msg: "give exactly one of --older-than D and --all"}
	}
	cutoff := time.Now()
	if !*all {
		age, err := parseAge(*older)
		if err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
		cutoff = cutoff.Add(-age)
	}
	removed, err := broker.PruneCaches(e.State, cutoff, *all)
	if e.JSON && err == nil {
		return e.PrintJSON("warrant.caches.prune/v1", struct {
			Cutoff  *string `json:"cutoff"` // null with --all
			Removed []cache `json:"removed"`
		}{cutoffText(cutoff, *all), cachesOf(removed)})
	}
	for _, c := range removed {
		fmt.Fprintf(e.Stdout, "Removed ")
		writeCache(e, c)
	}
	if err != nil {
		return err
	}
	switch {
	case len(removed) == 0 && *all:
		fmt.Fprintln(e.Stdout, "No workspace caches; nothing removed.")
	case len(removed) == 0:
		fmt.Fprintf(e.Stdout, "No cache was last used before %s; nothing removed.\n", cutoff.Format(time.RFC3339))
	default:
		fmt.Fprintf(e.Stdout, "Removed %d cache(s). The next action of each workspace starts a new one, and asks for approval again (the cache's directory is pinned in its policy).\n", len(removed))
	}
	return nil
}

func cutoffText(t time.Time, all bool) *string {
	if all {
		return nil
	}
	return view.OptTime(t)
}

// humanBytes prints n in the largest binary unit that keeps one decimal.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
