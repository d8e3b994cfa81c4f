// Package view is what a person or an agent is shown of the broker's
// records: the one object `broker run --json` prints and the MCP server's
// run, status and wait tools return (Ending, Action, with the summary in
// words for text shown or printed live; what the sandbox refused, with the
// rule in words and the smallest remedy, in denial.go; what an action with
// an egress grant connected to, in egress.go; a receipt's refusals for
// receipts show, WriteRefused), a command line quoted for a shell
// (CommandLine) and a name quoted for a terminal when it would not print
// as itself (Plain), the operator's objects (Approval, Lease, ActionEntry,
// Identity), and the JSON convention's helpers (json.go: Document, Time,
// Text, List; docs/json.md). The CLI and the MCP server (broker/mcp) share
// it so that both say the same thing in the same words. Receipts
// themselves are shown by broker/view/receiptview, which brokerd and the
// MCP server link: this package links no receipt code, so that the thin
// client does not.
//
// # Invariants
//
//   - Every field comes from the broker's status of an action or from the
//     signed receipt log; nothing is inferred beyond what lostSight names
//     (an answer lost in transit may mean an accepted action, so the
//     outcome is unknown, never "not executed").
//
// It decides nothing and holds no authority: it imports no socket, no
// journal and no part of the pipeline.
package view
