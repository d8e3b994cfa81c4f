package cli

import (
	"fmt"
	"strconv"
	"time"

	"warrant/broker"
)

// cacheCommands are the subcommands of `broker caches`: list reads the
// state directory without the lock, beside a running broker; prune needs
// the directory to itself.
var cacheCommands = map[string]subcommand{
	"list":  {"caches list [--json]", cachesList},
	"prune": {"caches prune --older-than D|--all [--json]", cachesPrune},
}

func runCaches(e *env, args []string) error { return e.runSub(cacheCommands, args) }

func cachesList(e *env, args []string) error {
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	list, err := broker.ListCaches(e.state)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(nonNil(list))
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "No workspace caches.")
	}
	for _, c := range list {
		writeCache(e, c)
	}
	return nil
}

func writeCache(e *env, c broker.CacheInfo) {
	ws := "workspace unknown"
	if c.Workspace != "" {
		ws = fmt.Sprintf("workspace %s (dev %d, ino %d)", strconv.Quote(c.Workspace), c.Dev, c.Ino)
	}
	fmt.Fprintf(e.stdout, "%s  %s in %d file(s)  last used %s  %s\n    %s\n",
		c.Key, humanBytes(c.Bytes), c.Files, c.LastUse.UTC().Format(time.RFC3339), ws, c.Dir)
	if c.Problem != "" {
		fmt.Fprintf(e.stdout, "    (%s)\n", c.Problem)
	}
}

func cachesPrune(e *env, args []string) error {
	older := e.fs.String("older-than", "", "remove the caches last used longer ago than this (e.g. 720h or 30d)")
	all := e.fs.Bool("all", false, "remove every cache")
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	if *all == (*older != "") {
		return usageError{"give exactly one of --older-than D and --all"}
	}
	cutoff := time.Now()
	if !*all {
		age, err := parseAge(*older)
		if err != nil {
			return usageError{err.Error()}
		}
		cutoff = cutoff.Add(-age)
	}
	removed, err := broker.PruneCaches(e.state, cutoff, *all)
	if e.json && err == nil {
		return e.printJSON(struct {
			Cutoff  *string            `json:"cutoff"` // null with --all
			Removed []broker.CacheInfo `json:"removed"`
		}{cutoffText(cutoff, *all), nonNil(removed)})
	}
	for _, c := range removed {
		fmt.Fprintf(e.stdout, "Removed ")
		writeCache(e, c)
	}
	if err != nil {
		return err
	}
	switch {
	case len(removed) == 0 && *all:
		fmt.Fprintln(e.stdout, "No workspace caches; nothing removed.")
	case len(removed) == 0:
		fmt.Fprintf(e.stdout, "No cache was last used before %s; nothing removed.\n", cutoff.Format(time.RFC3339))
	default:
		fmt.Fprintf(e.stdout, "Removed %d cache(s). The next action of each workspace starts a new one, and asks for approval again (the cache's directory is pinned in its policy).\n", len(removed))
	}
	return nil
}

func cutoffText(t time.Time, all bool) *string {
	if all {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
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
