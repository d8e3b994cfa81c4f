package cli

import (
	"flag"
	"fmt"
	"slices"
	"strconv"

	"warrant/broker/view"
	"warrant/wire"
)

// PrintJSON prints v as the top-level object of schema under the JSON
// convention (docs/json.md, broker/view.Document): every `--json` output
// goes through here, with a schema name of its own and a schema file in
// docs/schemas.
func (e *Env) PrintJSON(schema string, v any) error {
	doc, err := view.Document(schema, v)
	if err != nil {
		return err
	}
	_, err = e.Stdout.Write(doc)
	return err
}

// Page sizes of the listings: --limit defaults to defaultLimit; the
// operator's listings come from the daemon a page of at most wire.MaxList
// at a time.
const defaultLimit = 100

// PageFlags are --limit and --after of a listing.
type PageFlags struct {
	limit *uint
	after *string
}

// PageFlags declares --limit and --after; max is the largest page (0: no
// bound).
func (e *Env) PageFlags() PageFlags {
	return PageFlags{
		limit: e.Flags.Uint("limit", defaultLimit, "list at most N entries"),
		after: e.Flags.String("after", "", "list from after this cursor (the next_after of the previous page)"),
	}
}

// check validates the flags against a listing whose pages hold at most
// max entries (0: any number).
func (p PageFlags) Check(max int) error {
	if *p.limit < 1 || (max > 0 && *p.limit > uint(max)) {
		if max > 0 {
			return UsageError{fmt.Sprintf("--limit must be from 1 to %d", max)}
		}
		return UsageError{"--limit must be at least 1"}
	}
	return nil
}

// Given reports whether --limit or --after was on the command line.
func (p PageFlags) Given(e *Env) bool {
	set := false
	e.Flags.Visit(func(f *flag.Flag) { set = set || f.Name == "limit" || f.Name == "after" })
	return set
}

// wire is the operator socket's request for the page.
func (p PageFlags) wire(kind wire.ListKind, unknownOnly bool) wire.List {
	return wire.List{Kind: kind, UnknownOnly: unknownOnly, Limit: uint32(*p.limit), After: *p.after}
}

// WriteMore tells a person how to list the rest of a truncated listing.
func (e *Env) WriteMore(command string, next *string) {
	if next != nil {
		fmt.Fprintf(e.Stdout, "(more follow: broker %s --after %s)\n", command, strconv.Quote(*next))
	}
}

// listing is the page of wire entries truncated says, each under its
// view, with the last one's cursor when more follow.
func listing[W, V any](entries []W, truncated bool, of func(*W) V, cursor func(V) string) view.List[V] {
	l := view.List[V]{Items: make([]V, len(entries)), Truncated: truncated}
	for i := range entries {
		l.Items[i] = of(&entries[i])
	}
	if truncated && len(l.Items) > 0 {
		c := cursor(l.Items[len(l.Items)-1])
		l.NextAfter = &c
	}
	return l
}

// PageOf is the page pf asks for of a listing read whole (items in its
// order), each item named by cursor: the entries after the one named
// --after (which must be there), at most --limit of them.
func PageOf[T any](items []T, pf PageFlags, cursor func(T) string) (view.List[T], error) {
	start := 0
	if *pf.after != "" {
		i := slices.IndexFunc(items, func(v T) bool { return cursor(v) == *pf.after })
		if i < 0 {
			return view.List[T]{}, UsageError{fmt.Sprintf("--after %q names no entry of the listing: pass the next_after of the previous page", *pf.after)}
		}
		start = i + 1
	}
	rest := items[start:]
	l := view.List[T]{Items: view.NonNil(rest[:min(len(rest), int(*pf.limit))])}
	if len(rest) > len(l.Items) {
		c := cursor(l.Items[len(l.Items)-1])
		l.Truncated, l.NextAfter = true, &c
	}
	return l, nil
}
