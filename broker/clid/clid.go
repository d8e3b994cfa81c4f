package clid

import (
	"io"

	"warrant/broker/cli"
)

// local is what brokerd adds to the thin client's commands.
var local = &cli.Local{
	Commands: map[string]cli.Body{
		"serve": runServe, "probe": runProbe, "mcp": runMCP, "receipts": runReceipts,
		"output": runOutput, "caches": runCaches, "toolchains": runToolchains,
		"contracts": runContracts, "goals": runGoals,
	},
	Embed:      embed,
	Capability: capabilityStatus,
}

// Main runs brokerd with args (without the program name) and returns its
// exit status.
func Main(args []string, stdout, stderr io.Writer) int { return cli.Run(args, stdout, stderr, local) }
