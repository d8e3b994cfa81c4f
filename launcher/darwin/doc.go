// Package darwin is the macOS launcher: the same contract as the Linux one,
// enforced with Seatbelt.
package darwin
