package broker

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// SaveCapabilityReport appends r to the journal's capability reports.
func (j *Journal) SaveCapabilityReport(ctx context.Context, r *CapabilityReport) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("save capability report: %w", err)
	}
	return j.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO capability_reports (binding, state, report, created_unix) VALUES (?, ?, ?, ?)`,
			r.Binding.key(), r.State.String(), string(raw), j.now().Unix())
		if err != nil {
			return fmt.Errorf("save capability report: %w", err)
		}
		return nil
	})
}

// LatestCapabilityReport returns the last stored capability report, or nil.
func (j *Journal) LatestCapabilityReport(ctx context.Context) (*CapabilityReport, error) {
	var raw, key string
	err := j.db.QueryRowContext(ctx, `SELECT report, binding FROM capability_reports ORDER BY seq DESC LIMIT 1`).Scan(&raw, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read capability report: %w", err)
	}
	r := &CapabilityReport{}
	if err := json.Unmarshal([]byte(raw), r); err != nil {
		return nil, fmt.Errorf("read capability report: %w", err)
	}
	if r.Binding.key() != key {
		return nil, fmt.Errorf("read capability report: its binding does not match its key")
	}
	return r, nil
}
