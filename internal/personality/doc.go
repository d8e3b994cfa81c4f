// Package personality names the two personality(2) arguments warrant
// uses, so that the launcher, which sets and checks the persona, and its
// seccomp policy (launcher/linux/seccompgen), which allows personality
// with these arguments only, cannot drift apart.
package personality
