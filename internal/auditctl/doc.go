// Package auditctl speaks the kernel's audit netlink protocol
// (linux/audit.h) for the few control messages warrant sends: Status
// (AUDIT_GET) and SetEnabled (AUDIT_SET), and Messages, which splits a
// datagram, for broker/internal/audit's reader of Landlock's records.
// The broker only reads the status; enabling audit is for tests
// (audittest), as an operator's auditctl -e 1 would.
package auditctl
