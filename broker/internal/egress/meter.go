package egress

import (
	"errors"
	"math"
	"net"
)

// errBudget is a meter's Read past its budget.
var errBudget = errors.New("head too long")

// meter counts the bytes read from and written to a connection, and
// bounds what Read returns until its budget is raised.
type meter struct {
	c      net.Conn
	budget int64 // bytes Read may still return
	read   uint64
	wrote  uint64
}

// unlimited is a budget that does not run out.
const unlimited = math.MaxInt64

func (m *meter) Read(p []byte) (int, error) {
	if m.budget <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > m.budget {
		p = p[:m.budget]
	}
	n, err := m.c.Read(p)
	m.budget -= int64(n)
	m.read += uint64(n)
	return n, err
}

func (m *meter) Write(p []byte) (int, error) {
	n, err := m.c.Write(p)
	m.wrote += uint64(n)
	return n, err
}
