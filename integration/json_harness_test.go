//go:build linux

package integration

import (
	"encoding/json"
	"testing"
)

// listing is the object every `--json` listing prints (docs/json.md).
type listing[T any] struct {
	Schema    string  `json:"schema"`
	Items     []T     `json:"items"`
	Truncated bool    `json:"truncated"`
	NextAfter *string `json:"next_after"`
}

// wholeListing decodes a listing printed by `broker WHAT --json` and
// requires that it is whole: the tests' listings are far below a page.
func wholeListing[T any](t testing.TB, what, out string) []T {
	t.Helper()
	var l listing[T]
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.Items == nil {
		t.Fatalf("broker %s --json printed no listing: %v\n%s", what, err, out)
	}
	if l.Truncated || l.NextAfter != nil {
		t.Fatalf("broker %s --json stopped early:\n%s", what, out)
	}
	return l.Items
}

// verified is what `broker receipts verify --json` prints, in the parts
// the tests read.
type verified struct {
	OK       bool `json:"ok"`
	KeyGiven bool `json:"key_given"`
	Anchor   *struct {
		Size int64 `json:"size"`
	} `json:"anchor"`
	Entries    int64 `json:"entries"`
	Receipts   int   `json:"receipts"`
	Deletions  int   `json:"deletions"`
	Survivors  int   `json:"survivors"`
	Verdicts   int   `json:"verdicts"`
	Statements int   `json:"statements"`
	Unanchored int64 `json:"unanchored"`
	Checkpoint *struct {
		Size     int64  `json:"size"`
		RootHash string `json:"root_hash"`
	} `json:"checkpoint"`
}

// survivorsEntry is a survivors record as `broker receipts list --json`
// lists it.
type survivorsEntry struct {
	Kind      string `json:"kind"`
	Survivors *struct {
		Action       string   `json:"action"`
		Pids         []int    `json:"pids"`
		Commands     []string `json:"commands"`
		IdentifiedBy string   `json:"identified_by"`
		Gone         bool     `json:"gone"`
	} `json:"survivors"`
}
