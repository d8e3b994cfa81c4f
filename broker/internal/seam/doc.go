// Package seam is every test seam of the broker, in one place. A seam is
// a way for a test to reach inside a real daemon: stop it at a named
// point of a transaction (to SIGKILL it there), replace its executor with
// one that starts nothing, widen its default policy so that the
// capability probe must catch the hole, or skip the probe for an
// executor double.
//
// Production builds have none of them. The build-tagged files set the
// hooks only in binaries built with -tags warrant_crashtest or
// -tags warrant_insecure_probe_test, which only the tests that need them
// build; InsecureSkipProbe is set only from _test.go files, and a test
// checks that no other file assigns it. broker.Open applies every seam
// through one call, logs a warning naming the active ones, and records
// them in the capability report (test_seams), so a report can never hide
// that it was made with a seam in force. `make lint` vets the tagged
// builds too.
package seam
