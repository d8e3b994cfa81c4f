// Package admission is the request's way in: everything the broker adds
// to a submit, or checks of it, between its closed shape
// (identity.Admit) and the lease match — its call id, its resolution
// with the broker's authority, environment, caches, toolchains and the
// operator's files, and the alias scan of its workspace. The broker root
// drives these steps in order (submit.go); each is a function of what
// it is given, with no reference to the broker.
//
//	calls.go        a submit's call id: the journal's Call for it (CallOf), and
//	                what the call id already stands for (Repeated, Raced)
//	resolver.go     Resolver: everything decided at Open that a resolution uses;
//	                Resolve (identity.Resolve with the bindings, the git identity,
//	                the toolchain and the asked egress, presets expanded, added),
//	                ResolveProbe (the capability probe's program), a bare name
//	                missing from the sanitized PATH found on the broker's own
//	                (notOnPath)
//	inputs.go       an action's environment and policy (Inputs, identity.Inputs):
//	                the default policy, the workspace's cache, the toolchain
//	                (decide); the environment every identity starts from (ActionEnv)
//	authority.go    the places no workspace may overlap and the directories
//	                withheld from a program's own (Authority)
//	declared.go     <state>/env and --env: the operator's declared variables
//	bindings.go     <state>/bindings: the executables sealed by default
//	gitidentity.go  the operator's git identity, read from git's global files at
//	                Open, written as each action's HOME/.gitconfig
//	toolchains.go   the toolchain host (ToolchainHost), and `broker toolchains`
//	                from a state directory without a broker (Toolchains)
//	scope.go        the alias scan of the workspace with its cache as writable
//	                scope, the cache held to its pin (Scan: WORKSPACE_ALIASED)
//
// # Invariants
//
//   - Everything a Resolver adds is in the identity, so the fingerprint
//     covers it: the environment (declared variables, the cache's and the
//     toolchain's), the policy (the cache's path and pin, the toolchain's
//     root), the binding, the git identity, the toolchain, the egress
//     list (exact entries: a preset is expanded, never kept by name).
//   - The operator's files (<state>/env, <state>/bindings) are read once,
//     at Open, under statedir.ReadOperatorFile's rule (<state>/egress,
//     the presets, by egress.ReadPresets, at Open too); a malformed line,
//     a refused name or an unsafe file stops the broker with a sentence
//     naming the file and the line.
//   - A call id's repeat answers what the call already stands for and
//     starts nothing, consumes nothing: its action's status, its pending
//     request, its denial; otherwise the submit goes on (the broker's
//     package doc, "Call ids").
//   - The alias scan counts names in the cache as inside the writable
//     scope only in the very directory the policy pinned.
package admission
