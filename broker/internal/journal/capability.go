package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SaveCapabilityReport appends one capability report: its binding key
// (the hex SHA-256 of what it holds for), its state, and the whole report
// as JSON. The table is append-only (a trigger refuses updates); the last
// row is the current report.
func (j *Journal) SaveCapabilityReport(ctx context.Context, key, state string, report []byte) error {
	return j.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO capability_reports (binding, state, report, created_unix) VALUES (?, ?, ?, ?)`,
			key, state, string(report), j.now().Unix())
		if err != nil {
			return fmt.Errorf("save capability report: %w", err)
		}
		return nil
	})
}

// LatestCapabilityReport returns the last stored report's JSON and its
// binding key, or nil when none is stored.
func (j *Journal) LatestCapabilityReport(ctx context.Context) (report []byte, key string, err error) {
	var raw string
	err = j.db.QueryRowContext(ctx, `SELECT report, binding FROM capability_reports ORDER BY seq DESC LIMIT 1`).Scan(&raw, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read capability report: %w", err)
	}
	return []byte(raw), key, nil
}
