package broker

// Test-only hooks. Both are nil in every production build; only a binary
// built with the warrant_crashtest tag (crashtest_hooks.go) sets them, so
// that the crash-consistency test can stop a real daemon at a named point
// of a transaction and SIGKILL it there.
var (
	// crashtestPause is called at the named points of the approve and
	// checkpoint transactions.
	crashtestPause func(stage string)
	// crashtestExecutor supplies an executor that starts nothing and
	// leaves every checkpointed action in flight, as a launch would be.
	crashtestExecutor func(stateDir string) Executor
)

func pausePoint(stage string) {
	if crashtestPause != nil {
		crashtestPause(stage)
	}
}
