// Package receipt builds, signs, chains and verifies command receipts, and
// records output streams with streaming redaction and exact truncation
// accounting.
package receipt
