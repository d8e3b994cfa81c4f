// Package envpolicy builds and checks a target's environment
// (docs/architecture.md §2.5). Nothing is inherited but LANG, LC_* and TZ:
// provider keys, proxies, the SSH agent, cloud credentials and every LD_*
// variable in the broker's environment never reach a target, because the
// broker takes nothing else from it. PATH is not inherited at all: it is
// the fixed SanitizedPath.
//
// # Declared variables
//
// Toolchains need a few variables of their own (GOROOT, JAVA_HOME,
// RUSTUP_HOME, GOFLAGS). The broker sets those of a toolchain it
// recognises around the executable (broker/internal/toolchain); the
// operator declares the others, or their own values,
// by name and value, at broker start (`--env NAME=VALUE`, <state>/env);
// they are never taken from anyone's environment. Declare refuses a
// malformed name, one of the fixed four (PATH, HOME, TMPDIR, TERM), and
// every Denied name: LD_*, secret-looking names (*_TOKEN, *_KEY,
// *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL*, AWS_*), credential agents
// (SSH_AUTH_SOCK, SSH_AGENT_PID, GPG_AGENT_INFO), proxies (*_PROXY,
// NO_PROXY and npm's npm_config_proxy among them) and warrant's own
// WARRANT_*, ignoring case. The proxy variables of an action with an
// egress lease are the broker's own (ProxyEnv: its proxy's address, in
// each client's spelling), never an operator's. The broker adds the workspace
// cache's variables the same way (broker/internal/caches). All of them are
// in the identity, so the fingerprint covers names and values and the
// approval card shows them; receipts list the names.
//
// # What the launcher checks, and why not an allowlist
//
// The broker builds the environment with Build; the launcher, which
// treats every byte of the request as hostile, re-checks it with Check.
// Check cannot hold the operator's list: the launcher takes no
// configuration by design (it is the trusted base, and a file it read
// would be one more input to trust), and the declared names are in the
// request it is checking. So its rule is fixed and closed the other way
// round: every name well-formed and unique, none Denied, and PATH, TERM,
// HOME and TMPDIR present with exactly their values (the sanitized PATH,
// dumb, the action's own directories). A confused or compromised broker
// can therefore pass a target a variable no operator declared — but never
// a loader variable, a credential-looking one, a proxy or an agent
// socket, whatever its own environment holds; what it passes is in the
// identity the operator approved. The capability probe puts canaries
// (credential-looking names, SSH_AUTH_SOCK, HTTPS_PROXY, a name of no
// meaning) in the broker's own environment and checks that none reaches
// its target: they are never declared, and Build takes only LANG, LC_*
// and TZ from there.
package envpolicy
