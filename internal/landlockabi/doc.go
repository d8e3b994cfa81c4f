// Package landlockabi is the one definition of the Landlock ABI as warrant
// counts it, shared by the broker (which sets the policy's floor) and the
// launcher (which refuses below it): the running ABI, the ABIs that bring
// TCP rules and scopes, and the floor a policy demands of a kernel.
//
// Both sides count the same way: a kernel that reports ABI 6 or later but
// lacks the fix of the signal-scope erratum counts as ABI 5, as
// go-landlock counts it. Were the broker to count the raw version, it
// would demand ABI 6 of such a kernel and the launcher, counting 5, would
// refuse every action.
//
// It makes only the two read-only landlock_create_ruleset queries, with
// golang.org/x/sys/unix: go-landlock's syscall package would link its
// libcap psx module into the broker.
package landlockabi
