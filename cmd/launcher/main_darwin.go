package main

// launch is replaced by the macOS launcher's entry point.
func launch() int { return 125 }
