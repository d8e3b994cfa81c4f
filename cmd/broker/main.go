// Command broker is warrant's unprivileged daemon and its human/agent CLI.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "broker: not built yet: admission, approvals and the launch path arrive with the broker issues")
	os.Exit(125)
}
