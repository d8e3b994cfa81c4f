// Package audit reads Landlock's refusals from the kernel's audit
// records, source "kernel-audit" (wire.SourceKernelAudit): the kernel's
// own word that an access was refused, by which right, on which object.
//
// Where: a broker that may read the audit multicast group
// (CAP_AUDIT_READ: root) on a kernel with Landlock ABI 7 and audit
// enabled (audit=1 at boot, or auditd). The broker never enables audit;
// where it is off, or the broker is not root, the source is absent from
// an action's record. A Reader binds a NETLINK_AUDIT socket to
// AUDIT_NLGRP_READLOG, a read-only copy of every record that takes
// nothing from auditd, and keeps only types 1423 (AUDIT_LANDLOCK_ACCESS)
// and 1424 (AUDIT_LANDLOCK_DOMAIN).
//
// Which action: Landlock logs a domain (1424, status=allocated) with
// the pid of the process that created it, at the domain's first refusal,
// after that refusal's access record (1423); the launcher creates the
// action's domain and execs the target (launcher/linux, with
// LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON, so the target's refusals are
// logged). A Watch claims the domains its launcher's pid creates, and an
// access record of a domain not yet claimed waits, bounded in number
// and age. Records come asynchronously (the kernel's kauditd sends
// them): a Watch is closed once the action's group is gone and drained
// until no record came for a moment, within a bound (250 ms); the
// receipt never waits longer.
// A domain the target creates itself is not the sandbox's and is not
// claimed; records lost to a full socket buffer are not counted.
//
// The record text is untrusted: a path is the target's choice. Values
// are read as audit writes them (quoted, or hex for a string with a
// space, a quote or a byte outside printable ASCII), the first of a key
// wins, and an object is bounded before wire.DenialObject escapes it.
// Each record's first blocker gives the effect (fs.write_file write,
// fs.make_* create, fs.read_* read, fs.execute exec, net.connect_tcp
// connect, …) and the call (the right's name: the record names no system
// call), from a closed table, so an action's classes stay bounded; a
// write or create is outside the writable scope, anything else outside
// what Landlock grants. It decides nothing.
package audit
