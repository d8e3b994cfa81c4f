// Package logtext makes a deterministic text log for the output
// benchmarks and their tests: ordinary build and service log lines, some
// near misses of credential shapes, and now and then a credential line,
// each line given to the caller with what warrant's redaction must make
// of it. The expected redaction is written here by hand, line by line,
// not by the receipt package, so that a test comparing the two checks the
// redactor and the pipeline against an independent account.
//
// It is fixture code: only tests and benchmarks import it.
package logtext
