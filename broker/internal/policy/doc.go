// Package policy decides what an action may touch: the default sandbox
// policy (the runtime paths present on the host, /etc without its
// secrets, the operator's configured read paths, the devices, the
// Landlock floor) and the per-executable grant of the program's own
// directory. The card's words for a policy (its limitations text, what of
// /etc is withheld) are broker/internal/cardtext's, which the thin client
// links without this package.
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
//   - A toolchain's root (broker/internal/toolchain: ~/.rustup, a pyenv
//     root or version, a JDK…) is granted read and execute, never write,
//     when the read paths do not cover it (WithToolchain), and replaces
//     the program's own directory beneath it. It is refused — the
//     toolchain is then left out, not the action — when Withheld refuses
//     it, when it holds the home or the state directory, or holds or lies
//     in what /etc withholds.
//   - A workspace's cache is the only read-write path the broker adds
//     (WithReadWrite), canonical and pinned like every policy path; the
//     card says it is kept and shared by that workspace's actions.
//   - /etc without its secrets (etc_unix.go, splitSecrets). Landlock
//     rules only allow, so the secrets are left out by granting the rest
//     entry by entry, decided when the policy is made: Base, once, when
//     the broker starts (broker run's embedded broker: per run). The walk
//     opens everything beneath /etc's descriptor without following
//     symlinks, within bounds (depth 16, 32,768 names, 512 grants, 256
//     withheld paths). A secret is, whatever uid the broker runs as
//     (root bypasses modes; a user may be in the owning group): shadow*,
//     gshadow*, sudoers* (sudoers.d whole), master.passwd, spwd.db,
//     ssl/private, ssh/*_key, and every file others may not read or
//     directory they may not read and search. A directory with no
//     secret beneath it is one grant (fewer rules: 147 rather than one
//     per file on this project's host); one holding a secret is replaced
//     by its entries, recursively; a directory with nothing but secrets
//     and symlinks, or one the walk cannot open or finish within its
//     bounds, is withheld whole. A symlink is never granted: reading
//     through it needs a grant on its target (alternatives/* into /usr,
//     localtime into /usr/share/zoneinfo, ssl/certs/* into
//     /usr/share/ca-certificates or ssl/certs itself), and one leading
//     to a secret stays unreadable. A split directory (/etc itself)
//     gets no rule of its own, so it cannot be listed; its entries open
//     by name. /etc holding no secret is granted whole, as before. The grants are policy.read_entries, pinned to
//     the object the walk decided on (not re-opened by name); what is
//     withheld is policy.excluded, which the card lists. A configured
//     read path covering /etc, or part of it, is the operator's decision
//     and is not split.
//   - Robustness: an /etc entry replaced since (resolv.conf or
//     ld.so.cache rewritten by rename get a new inode) is skipped by the
//     launcher rather than refused: it grants less, and later actions
//     still run. Pins per action would keep it readable but would change
//     the fingerprint whenever such a file is rewritten, so no lease
//     would match after a package install; with the pins taken at start
//     the fingerprint changes only when a restarted broker finds an
//     entry replaced, and leases made before no longer match (the
//     operator approves again). A file added later to a directory
//     granted whole is readable, a secret too, and a mode changed to
//     0600 after the walk keeps its grant, until the broker restarts. A
//     program in a directory that holds a withheld path (/etc itself) is
//     refused with PATH_INVALID rather than granted that directory.
//   - The Landlock floor is ABI 4 (TCP bind/connect), or 6 when the
//     running kernel has scopes (abstract unix sockets and signals), so an
//     approval made on such a kernel can never be used with the scopes
//     silently missing. The floor is in the policy and so in the
//     fingerprint.
//   - The policy is data (wire.Policy), digested into the identity; the
//     launcher enforces it and re-derives nothing from this package.
package policy
