// Package policy decides what an action may touch: the default sandbox
// policy (the runtime paths present on the host, the operator's configured
// read paths, the devices, the Landlock floor) and the per-executable
// grant of the program's own directory; and the limitations text the
// operator's approval card prints beside the identity.
//
// # Decisions
//
//   - The policy grants the executable's (and interpreter's) own
//     directory when the runtime paths do not cover it, never a parent:
//     widening it to, say, the parent of a "bin" directory could expose a
//     home directory. Operators widen it with configured read paths.
//   - That directory is never granted when it is /, the home directory,
//     the state directory, above it or inside it (Withheld, compared by
//     dev and ino): For refuses the action with PATH_INVALID — the path
//     is the problem, not the arguments — and a sentence that says to move
//     the program into a directory of its own or to configure a read
//     path (`broker serve --read-path DIR`). A configured read path that
//     already covers the directory is the operator's decision and is not
//     second-guessed.
//   - A directory inside the workspace is never added: the workspace is
//     read-write (and executable) already. A workspace executable
//     (./gradlew, .venv/bin/python) whose symlinks lead outside the
//     workspace is allowed only to a file the read paths already cover
//     (.venv/bin/python → /usr/bin/python3.11); anything else is refused
//     with PATH_INVALID rather than granted, since the agent, not the
//     operator, chose where the link points.
//   - A workspace's cache is the only read-write path the broker adds
//     (WithReadWrite), canonical and pinned like every policy path; the
//     card says it is kept and shared by that workspace's actions.
//   - The Landlock floor is ABI 4 (TCP bind/connect), or 6 when the
//     running kernel has scopes (abstract unix sockets and signals), so an
//     approval made on such a kernel can never be used with the scopes
//     silently missing. The floor is in the policy and so in the
//     fingerprint.
//   - The policy is data (wire.Policy), digested into the identity; the
//     launcher enforces it and re-derives nothing from this package.
package policy
