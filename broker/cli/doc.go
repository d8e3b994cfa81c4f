// Package cli is the broker command's user interface (ARCHITECTURE §3.2):
// `serve` runs the daemon; `approvals`, `approve`, `deny`, `leases`,
// `revoke`, `actions` and `resolve` talk to it through the client package.
// Every command takes --state DIR (default $WARRANT_STATE, else
// $XDG_STATE_HOME/warrant, else ~/.local/state/warrant) and, where it
// prints data, --json. Human output is meant to be read before deciding:
// the approval card shows everything the approval will bind.
//
// Exit status: 0 success, 1 refused or failed (the code and sentence are
// printed), 2 usage error.
package cli
