//go:build linux

// Command seccompgen compiles the launcher's seccomp policy with
// libseccomp for the architecture it runs on, and writes the programs the
// launcher embeds (seccomp_{args,main,hints}_GOARCH.bpf) with a disassembly for
// reviewers (seccomp_GOARCH.txt). Run it with `go generate ./launcher/linux`
// on each architecture; a test checks that the committed programs and
// disassembly are byte-identical to what it produces from this policy.
package main
