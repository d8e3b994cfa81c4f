package seam

import "warrant/broker/runner"

// The seams. Each is nil or false in every production build: the
// warrant_* build tags (crashtest.go, insecure_probe.go) set the first
// three at init, and only _test.go files set InsecureSkipProbe.
var (
	crashPause     func(stage string)
	crashExecutor  func(stateDir string) runner.Executor
	extraReadPaths func(stateDir string) []string

	// InsecureSkipProbe marks the capability verified without running the
	// probe, for tests whose Executor is a double that starts nothing.
	// Nothing is unconfined by it: it skips the check, never the
	// launcher. Only _test.go files set it (TestOnlyTestsSetSeams).
	InsecureSkipProbe bool
)

// The names Active reports.
const (
	Crashtest     = "warrant_crashtest"
	InsecureProbe = "warrant_insecure_probe_test"
	SkipProbe     = "InsecureSkipProbe"
)

// Active names every seam in force in this process, or nil. The broker
// reads them once, at Open, logs them and records them in its capability
// report.
func Active() []string {
	var on []string
	if crashPause != nil || crashExecutor != nil {
		on = append(on, Crashtest)
	}
	if extraReadPaths != nil {
		on = append(on, InsecureProbe)
	}
	if InsecureSkipProbe {
		on = append(on, SkipProbe)
	}
	return on
}

// CrashPoint is called at the named points of the journal's approve and
// checkpoint transactions; the crash test blocks the n-th pass through
// one of them so that it can SIGKILL the daemon there.
func CrashPoint(stage string) {
	if crashPause != nil {
		crashPause(stage)
	}
}

// CrashExecutor is the crash test's executor, which starts nothing, or
// nil.
func CrashExecutor(stateDir string) runner.Executor {
	if crashExecutor == nil {
		return nil
	}
	return crashExecutor(stateDir)
}

// ExtraReadPaths are read paths the insecure-probe test adds to the
// default policy (the state directory itself), or nil.
func ExtraReadPaths(stateDir string) []string {
	if extraReadPaths == nil {
		return nil
	}
	return extraReadPaths(stateDir)
}
