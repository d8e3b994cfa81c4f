// Package integration holds the end-to-end tests: they build and run the
// real binaries and check real effects on the host.
package integration
