package broker

// insecureProbeTestReadPaths is nil in every production build. Only a
// binary built with -tags warrant_insecure_probe_test (probe_insecure_hooks.go),
// which only the probe's injected-failure test builds, sets it: it widens
// the default policy so that the probe must find the hole, report
// unavailable and refuse every submit.
var insecureProbeTestReadPaths func(stateDir string) []string
