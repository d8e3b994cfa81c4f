package journal

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// maxCached bounds each connection's prepared statements. The journal's
// statements are literals in this package, far fewer than this; a query
// text beyond it (should one be built at run time) is prepared for its
// call alone.
const maxCached = 256

// connector is modernc's connector (sqlite.NewConnector) whose
// connections keep the statements they have prepared, by their text.
// Parsing and planning an SQL statement cost more than running most of
// the journal's (BenchmarkAdmitAndCheckpoint in broker/): every action's
// checkpoint, events and receipt run the same few dozen statements. It
// changes nothing else: each call still binds its arguments to the
// statement and runs it in the caller's transaction.
type connector struct{ driver.Connector }

// openDB opens dsn through connector.
func openDB(dsn string) (*sql.DB, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector{base}), nil
}

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cachingConn{inner: conn, stmts: map[string]*cached{}}, nil
}

// cachingConn is a connection of modernc's driver with its statements
// kept. database/sql uses a connection from one goroutine at a time.
type cachingConn struct {
	inner driver.Conn
	stmts map[string]*cached
}

// cached is a kept statement; busy while rows read from it are open (a
// statement runs one query at a time, so a query made again meanwhile
// gets a statement of its own).
type cached struct {
	stmt driver.Stmt
	busy bool
}

// errNoContext is a driver without the context interfaces, which
// modernc's has.
var errNoContext = errors.New("journal: the sqlite driver lacks a context interface")

// prepared returns the kept statement for query, or a new one, and what
// to call once its results are read.
func (c *cachingConn) prepared(ctx context.Context, query string) (driver.Stmt, func(), error) {
	if k := c.stmts[query]; k != nil && !k.busy {
		k.busy = true
		return k.stmt, func() { k.busy = false }, nil
	}
	p, ok := c.inner.(driver.ConnPrepareContext)
	if !ok {
		return nil, nil, errNoContext
	}
	s, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	if _, kept := c.stmts[query]; kept || len(c.stmts) >= maxCached {
		return s, func() { s.Close() }, nil
	}
	k := &cached{stmt: s, busy: true}
	c.stmts[query] = k
	return s, func() { k.busy = false }, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, done, err := c.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	defer done()
	e, ok := s.(driver.StmtExecContext)
	if !ok {
		return nil, errNoContext
	}
	return e.ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, done, err := c.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	q, ok := s.(driver.StmtQueryContext)
	if !ok {
		done()
		return nil, errNoContext
	}
	rows, err := q.QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	return &releasing{Rows: rows, done: done}, nil
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	p, ok := c.inner.(driver.ConnPrepareContext)
	if !ok {
		return nil, errNoContext
	}
	return p.PrepareContext(ctx, query)
}

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) { return c.inner.Prepare(query) }

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	b, ok := c.inner.(driver.ConnBeginTx)
	if !ok {
		return nil, errNoContext
	}
	return b.BeginTx(ctx, opts)
}

//lint:ignore SA1019 driver.Conn requires Begin; database/sql calls BeginTx.
func (c *cachingConn) Begin() (driver.Tx, error) { return c.inner.Begin() }

func (c *cachingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *cachingConn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// Unwrap is the driver's own connection, which sqlite.Limit looks for.
func (c *cachingConn) Unwrap() driver.Conn { return c.inner }

func (c *cachingConn) IsValid() bool {
	v, ok := c.inner.(driver.Validator)
	return !ok || v.IsValid()
}

// Close finalizes the kept statements, then closes the connection.
func (c *cachingConn) Close() error {
	for q, k := range c.stmts {
		k.stmt.Close()
		delete(c.stmts, q)
	}
	return c.inner.Close()
}

// releasing is rows that give their statement back once closed.
type releasing struct {
	driver.Rows
	done func()
}

func (r *releasing) Close() error {
	err := r.Rows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}
