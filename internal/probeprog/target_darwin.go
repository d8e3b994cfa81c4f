package probeprog

import (
	"fmt"
	"os"
)

// Main refuses on macOS: the launcher does not confine there yet, so there
// is no battery to run.
func Main([]string) int {
	fmt.Fprintln(os.Stderr, "probe target: the capability probe is not built for macOS")
	return 2
}
