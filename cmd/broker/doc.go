// Command broker is warrant's thin client, the command people and
// shell-driven agents type: the commands that are one round trip to the
// daemon run here; for any other, and for `run` when no daemon answers,
// it executes brokerd from its own directory on the same command line
// (docs/architecture.md §3.2). The logic lives in warrant/broker/cli.
package main
