// Command broker is warrant's unprivileged daemon and its human CLI. The
// logic lives in warrant/broker/cli.
package main
