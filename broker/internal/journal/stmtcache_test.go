package journal

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestStatementCacheKeepsAndNests: a statement run again is the one kept
// (one entry, however often it runs), and the same query made while rows
// of it are still being read gets a statement of its own, so neither
// read is disturbed.
func TestStatementCacheKeepsAndNests(t *testing.T) {
	ctx := context.Background()
	j, err := Open(ctx, filepath.Join(t.TempDir(), "journal.db"), time.Now)
	must(t, err)
	defer j.Close()
	must(t, j.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE nums (n INTEGER)`)
		for n := range 3 {
			if err == nil {
				_, err = tx.ExecContext(ctx, `INSERT INTO nums (n) VALUES (?)`, n)
			}
		}
		return err
	}))
	const q = `SELECT n FROM nums ORDER BY n`
	read := func(rows interface {
		Next() bool
		Scan(...any) error
		Close() error
	}, inner func()) []int {
		defer rows.Close()
		var got []int
		for rows.Next() {
			var n int
			must(t, rows.Scan(&n))
			got = append(got, n)
			if inner != nil {
				inner()
			}
		}
		return got
	}
	// One connection: the nested query runs in the same transaction.
	tx, err := j.db.BeginTx(ctx, nil)
	must(t, err)
	outer, err := tx.QueryContext(ctx, q)
	must(t, err)
	var inners [][]int
	got := read(outer, func() {
		rows, err := tx.QueryContext(ctx, q)
		must(t, err)
		inners = append(inners, read(rows, nil))
	})
	must(t, tx.Rollback())
	want := []int{0, 1, 2}
	if !slices.Equal(got, want) {
		t.Fatalf("the outer read gave %v, want %v", got, want)
	}
	for _, in := range inners {
		if !slices.Equal(in, want) {
			t.Fatalf("a nested read gave %v, want %v", in, want)
		}
	}
	conn, err := j.db.Conn(ctx)
	must(t, err)
	defer conn.Close()
	must(t, conn.Raw(func(c any) error {
		kept := c.(*cachingConn).stmts
		if k := kept[q]; k == nil || k.busy {
			t.Fatalf("the query is not kept idle: %+v", k)
		}
		if k := kept[`INSERT INTO nums (n) VALUES (?)`]; k == nil {
			t.Fatal("the insert run three times is not kept")
		}
		return nil
	}))
}
