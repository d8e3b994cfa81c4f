// Package receiptview shows the signed receipt log for people and agents:
// an entry decoded beside the verifier's verdict (OpenEntry, FindReceipt,
// Shown.Write), a receipt's readable summary (receipt.go, with its
// egress in egress.go and its refusals through view.WriteRefused) and its
// retained output, head and tail, for `broker output` (Shown.Output, only
// from a receipt that verifies). brokerd's commands and the MCP server
// use it; the thin client does not, so that it links no receipt code.
//
// Display never vouches for a log entry: a receipt is shown beside
// receipt.Verify's verdict on it. It decides nothing and holds no
// authority.
package receiptview
