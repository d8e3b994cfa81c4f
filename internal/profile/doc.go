// Package profile holds the fixed resource bundles of docs/architecture.md §3.4.
// Both the broker (wall time, output budgets, the cgroups' memory and
// process-count limits) and the launcher (rlimits) read this one table, so the numbers cannot drift
// apart, and no request can carry free-form limits.
package profile
