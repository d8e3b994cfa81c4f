// Package toolchain recognises the toolchain layout an executable lies in
// (docs/architecture.md §2.5): rustup's proxies and toolchains, pyenv's
// shims and versions, nvm's and Volta's Node.js prefixes, SDKMAN!'s
// candidates, asdf's and mise's installs, a Homebrew prefix, a Go root, a
// JDK. For each it names the toolchain (a version, a default toolchain),
// the root an action of the program needs, which the broker grants read
// and execute and never write (policy.WithToolchain), and the variables
// the toolchain reads (RUSTUP_HOME, RUSTUP_TOOLCHAIN, PYENV_VERSION,
// GOROOT, JAVA_HOME…), and says why. The broker puts all of it into the
// identity, so the approval card shows it and the fingerprint covers it;
// `broker toolchains` lists it.
//
// What a manager would choose at run time is chosen here, once, and
// pinned (RUSTUP_TOOLCHAIN, PYENV_VERSION): from the operator's declared
// variables, else the operator's global setting (rustup's
// settings.toml, pyenv's version file). Nothing in the workspace — a
// rust-toolchain.toml, a .python-version — is read: the card names what
// runs. Shims that choose at run time and write their own state (asdf,
// mise, Volta) are not run as toolchains; the explanation names the
// installed program to run instead.
//
// # Threat model
//
// Discovery reads what the operator's uid owns and a target cannot write
// (the home directory's toolchains, /usr, /opt), never the workspace: a
// workspace executable gets no toolchain, whatever it links to. A
// layout's place comes from a declared variable or its documented
// default under $HOME, never from the broker's environment; Homebrew
// counts only at its documented prefixes. Marker files (settings.toml, a
// version file, VERSION, release) are read by descriptor, beneath their
// canonical directory, following no symlink, non-blocking, at most 64 KiB
// each; one directory (rustup's toolchains/) is listed, at most 256
// names; names taken from them are single path components. Whatever
// cannot be resolved this way — an unknown layout, a toolchain that is not
// installed, a symlinked (linked) toolchain, an unreadable or oversized
// marker — gives no toolchain: the program runs as it did without
// discovery (fail closed). The grant is read-only; the writes a toolchain
// makes (cargo's registry, Gradle's caches) go to the workspace's cache
// (broker/internal/caches).
//
// Only rustup, pyenv, Go and the JDKs have been tried on real installs;
// nvm, Volta, SDKMAN!, asdf, mise and Homebrew are built from their
// documented layouts and tried on fake trees (toolchain_test.go).
package toolchain
