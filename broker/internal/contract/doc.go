// Package contract is warrant's program contracts (docs/contracts.md): a
// small closed grammar of the arguments one executable may be given,
// which a human approves once instead of approving each argv. A
// contract changes who may approve a command, not what is bound: each
// concrete command keeps its own identity and fingerprint, and its
// receipt records the contract's digest and the Parse. The broker
// matches a submit with no exact lease against the workspace's grants
// (broker/contracts.go: Grant.Binds, then Match beneath the action's
// cwd); `broker contracts` (broker/cli) lists, shows, enables and
// revokes them.
//
// # Map
//
//   - contract.go: the file format's types, Decode (strict JSON: unknown,
//     misspelt or duplicate keys, null, empty lists, trailing data and
//     oversize files refused) and the canonical form behind Digest.
//   - validate.go: the grammar's rules and bounds (one element kind
//     each, every slot typed, flag spellings unambiguous, repetitions
//     bounded, at most wire.MaxArgs arguments and wire.MaxArgvBytes).
//   - regexp.go: a string slot's pattern: RE2, anchored, and not
//     free-form (no ".", no class outside printable ASCII, no unbounded
//     repetition, no case folding).
//   - match.go: Match, a deterministic greedy walk (a parsing expression
//     grammar: what a group took is never given back) within maxSteps;
//     Parse and MatchError.
//   - values.go: each value type's check; paths and Go packages resolved
//     beneath the directory by descriptor (beneath_linux.go: openat2
//     RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS; beneath_darwin.go:
//     O_NOFOLLOW_ANY on a path already free of ".."), the caller's
//     protected predicate asked about the path and every directory above.
//   - workspace.go: package.json's scripts and the makefile's plain rule
//     targets, read by descriptor, at most 1 MiB.
//   - usage.go: Usage, the grammar as the approval card shows it.
//   - grant.go: Grant, the lease-like envelope the broker adds at
//     approval, and BaseFingerprint, the identity without argv and cwd
//     that a grant binds.
//   - library.go, library/*.json: the shipped contracts (go, go-test,
//     go-vet, go-build, gofmt, npm-test, npm-run, pytest, cargo, git,
//     make; go's branches are go-test's, go-vet's and go-build's
//     grammars, which a test keeps equal).
//
// # Invariants
//
// A *Contract exists only validated and never changes. Match accepts an
// argv only when every argument was taken by exactly one slot, in order,
// and each value satisfied its type at that moment; otherwise it names
// the argument refused and why. No value may begin with "-" or be
// empty, so no typed slot can smuggle a flag to the program.
//
// # Threat model
//
// The contract file is the operator's (or the library's); the argv is
// the agent's and hostile. A contract bounds the argv only: what the
// program then does with the workspace (a test's code, a make recipe,
// an npm script) is the sandbox's business, as for any approved
// command. The path checks hold when Match runs; a concurrent action
// could change the tree before the launch, so what keeps protected
// paths safe is the boundary (broker/internal/protect), not the
// contract. Makefile targets are found syntactically: a target written
// inside a false conditional is listed though make does not have it.
package contract
