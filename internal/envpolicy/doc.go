// Package envpolicy builds and checks a target's environment from a fixed
// allowlist (docs/architecture.md §2.5). Nothing outside the list ever reaches a
// target: provider keys, proxies, the SSH agent, cloud credentials and
// every LD_* variable are dropped because they are not on it. PATH is not
// inherited at all: it is the fixed SanitizedPath.
//
// The broker builds the environment with Build; the launcher, which trusts
// nothing the broker says, re-checks it with Check.
package envpolicy
