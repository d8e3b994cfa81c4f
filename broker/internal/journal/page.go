package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"warrant/wire"
)

// page is how a listing query continues after a cursor: the condition to
// AND into its WHERE clause and its arguments. Listings are ordered by
// (created_unix, rowid), ascending or (desc) descending; the cursor is
// the key of the last entry of the previous page and must exist.
func page(ctx context.Context, db querier, table, key, after string, desc bool) (string, []any, error) {
	if after == "" {
		return "1", nil, nil
	}
	var created, rowid int64
	err := db.QueryRowContext(ctx, `SELECT created_unix, rowid FROM `+table+` WHERE `+key+` = ?`, after).Scan(&created, &rowid)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"no entry has id %q: pass --after the next_after of the previous page", after)
	}
	if err != nil {
		return "", nil, fmt.Errorf("read the cursor %q: %w", after, err)
	}
	op := ">"
	if desc {
		op = "<"
	}
	return "(created_unix, rowid) " + op + " (?, ?)", []any{created, rowid}, nil
}
