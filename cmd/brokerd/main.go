package main

import (
	"os"

	"warrant/broker/clid"
)

func main() {
	os.Exit(clid.Main(os.Args[1:], os.Stdout, os.Stderr))
}
