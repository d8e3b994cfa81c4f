// Package clid is brokerd's command line (docs/architecture.md §3.2):
// the thin client's commands (broker/cli, which it runs through cli.Run)
// plus what needs the broker itself or reads the state directory, and so
// links the broker, its journal and the MCP SDK: `serve` (serve.go, the
// daemon), `probe` (probe.go; capability.go: `status` without a handle),
// `mcp` (mcp.go), `receipts` (receipts*.go), `output` (output*.go),
// `caches`, `toolchains`, `goals` and `contracts` (goal views and the
// contract library), and the embedded broker `run` and `mcp` open when
// no daemon answers (embedded.go, open.go). What broker/cli's doc says
// of these commands holds here.
package clid
