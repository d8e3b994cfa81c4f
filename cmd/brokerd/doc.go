// Command brokerd is warrant's unprivileged daemon and the whole broker
// command: serve, mcp, probe, the embedded broker and the commands that
// read the state directory, beside every command of the thin client
// (cmd/broker), which executes it for those. The logic lives in
// warrant/broker/clid.
package main
