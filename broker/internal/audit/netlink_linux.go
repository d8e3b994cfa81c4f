package audit

import (
	"sync"
	"time"

	"warrant/internal/auditctl"
	"warrant/internal/landlockabi"
)

// groupReadlog is AUDIT_NLGRP_READLOG (linux/audit.h).
const groupReadlog = 1

// Available reports whether an action's Landlock refusals would reach a
// Reader now, so that the launcher may ask for them to be logged: the
// broker may read the audit status (root), audit is enabled, Landlock is
// of ABI 7 as the launcher counts it, a flood of refusals cannot panic
// the kernel (audit failure mode 2, where they stay unlogged), and the
// Shared reader is open. It is decided at most once per statusFor: a
// netlink round trip cost each action about 0.3 ms. An action started
// within that time of audit being switched follows the old state, as one
// running while it is switched does.
func Available() bool {
	status.Lock()
	defer status.Unlock()
	if now := time.Now(); now.Sub(status.at) >= statusFor {
		on, panics, err := auditctl.Status()
		status.at, status.ok = now, err == nil && on && !panics && landlockabi.Running() >= 7
		if status.ok {
			_, err = Shared()
			status.ok = err == nil
		}
	}
	return status.ok
}

const statusFor = time.Second

// status is Available's last reading.
var status struct {
	sync.Mutex
	at time.Time
	ok bool
}
