// Package integration holds the end-to-end tests: they build the real
// broker and launcher, run them as root with real targets, and check real
// effects on the host (files, listeners, marker processes, /proc, the
// journal and the receipts). The tests are Linux-only: the launcher they
// exercise is the Linux one.
package integration
