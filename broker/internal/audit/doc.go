// Package audit reads Landlock's refusals from the kernel's audit
// records, source "kernel-audit" (wire.SourceKernelAudit): the kernel's
// own word that an access was refused, by which right, on which object.
//
// Where: a broker that may read the audit multicast group
// (CAP_AUDIT_READ: root) on a kernel with Landlock ABI 7 and audit
// enabled (audit=1 at boot, or auditd), unless a lost record would panic
// the kernel (audit failure mode 2): Available. Only then does the
// broker ask the launcher to have the target's refusals logged
// (wire.SpawnRequest.AuditDenials), so that no target writes to the
// host's audit log unread. The broker never enables audit; elsewhere the
// source is absent from an action's record. A Reader binds a
// NETLINK_AUDIT socket to AUDIT_NLGRP_READLOG, a read-only copy of every
// record that takes nothing from auditd, and keeps only types 1423
// (AUDIT_LANDLOCK_ACCESS) and 1424 (AUDIT_LANDLOCK_DOMAIN) from the
// kernel.
//
// Which action: Landlock logs a domain (1424, status=allocated) with
// the pid of the process that created it, at the domain's first refusal,
// after that refusal's access record (1423); the launcher creates the
// action's domain and execs the target (launcher/linux, with
// LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON, so the target's refusals are
// logged, and LOG_SUBDOMAINS_OFF, so that no domain the target makes
// itself is: with the launcher's pid, it could forge refusals). A Watch
// claims the domains its launcher's pid creates, and an access record of
// a domain not yet claimed waits, bounded in number and age. Records
// come asynchronously (the kernel's kauditd sends them): a Watch is
// closed once the action's group is gone and drained until no record
// came for 30 ms since, within 250 ms; an action watched so ends that
// much later, and the receipt never waits longer.
//
// Not covered: records lost to a full socket buffer are not counted; a
// domain made by a host process whose pid a launcher later reuses, while
// that process's children still run in it, would be claimed by the
// launcher's action (the records name no start time); a target may hide
// its refusals under a domain of its own, which is never logged.
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
