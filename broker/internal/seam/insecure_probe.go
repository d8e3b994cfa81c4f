//go:build warrant_insecure_probe_test

package seam

// THIS FILE IS ONLY IN BINARIES BUILT WITH -tags warrant_insecure_probe_test,
// which only the capability probe's injected-failure test builds. It
// deliberately omits one restriction of the default policy: the state
// directory (journal, keys, the probe's marker secret) becomes readable by
// every action. The probe must catch it.

func init() {
	extraReadPaths = func(stateDir string) []string { return []string{stateDir} }
}
