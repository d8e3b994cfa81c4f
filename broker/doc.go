// Package broker is warrant's daemon: admission, approvals, leases, goals,
// the journal, lifecycle supervision and receipts. It never executes
// anything itself.
package broker
