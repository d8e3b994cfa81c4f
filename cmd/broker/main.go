// Command broker is warrant's unprivileged daemon and its human CLI. The
// logic lives in warrant/broker/cli.
package main

import (
	"os"

	"warrant/broker/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
