package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// The JSON convention of every `--json` output (docs/json.md): snake_case
// keys, digests in lower-case hex, times as RFC 3339 UTC with nine
// fractional digits, explicit null for what was not observed, and a
// top-level "schema" naming the object and its version. A new command
// follows it by printing one of these view types through Document with a
// schema name of its own and a schema file in docs/schemas.

// TimeLayout is RFC 3339 with nanoseconds, always nine digits: the
// convention's timestamp.
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Time formats t in UTC under TimeLayout.
func Time(t time.Time) string { return t.UTC().Format(TimeLayout) }

// UnixTime formats whole seconds since the epoch under TimeLayout.
func UnixTime(sec int64) string { return Time(time.Unix(sec, 0)) }

// OptTime is Time, or nil (JSON null) for the zero time: not observed.
func OptTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := Time(t)
	return &s
}

// Text is s, or nil (JSON null) when empty: not set or not observed.
func Text(s string) *string { return optional(s) }

// List is one page of a listing: Items in the listing's order, and
// whether more follow (Truncated) with the cursor to pass as --after to
// get them (NextAfter, null on the last page).
type List[T any] struct {
	Items     []T     `json:"items"`
	Truncated bool    `json:"truncated"`
	NextAfter *string `json:"next_after"`
}

// Document encodes v, which must encode as a JSON object, as the
// top-level object of schema (e.g. "warrant.run/v1"): "schema" first,
// then v's fields, indented, with a final newline.
func Document(schema string, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", schema, err)
	}
	if len(raw) < 2 || raw[0] != '{' {
		panic(fmt.Sprintf("view: internal error: %s is not a JSON object", schema))
	}
	name, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", schema, err)
	}
	var doc bytes.Buffer
	doc.WriteString(`{"schema":`)
	doc.Write(name)
	if string(raw) != "{}" {
		doc.WriteByte(',')
		doc.Write(raw[1:])
	} else {
		doc.WriteByte('}')
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("encode %s: %w", schema, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
