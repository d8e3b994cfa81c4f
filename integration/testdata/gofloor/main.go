// Command gofloor is the smallest Go program, the floor two of the
// chain's benchmarks measure beside themselves. Without arguments it
// exits at once: what starting any Go client costs (BenchmarkCLIRunTrue).
// With "exec PATH" it reads one byte from its standard input, then
// executes PATH: what a warm Go launcher costs that checks and confines
// nothing (BenchmarkLaunchTrue).
package main

import (
	"os"
	"syscall"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "exec" {
		return
	}
	var b [1]byte
	if n, _ := os.Stdin.Read(b[:]); n == 1 {
		err := syscall.Exec(os.Args[2], os.Args[2:], nil)
		os.Stderr.WriteString("gofloor: " + err.Error() + "\n")
	}
	os.Exit(127)
}
