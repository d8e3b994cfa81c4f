// Package brokerfuzz holds the fuzz targets that need the broker package:
// shebang parsing and admission. They live apart from package fuzz
// because the broker links the SQLite journal, and `go test -fuzz`
// instruments for coverage everything the test binary links. With
// SQLite's translated C in the binary, every target of the package ran
// several times slower: in 30 s, FuzzReceiptDecode ran 0.31 M executions
// beside the broker and 1.42 M without it. Their seed corpora live in
// testdata/fuzz and run as ordinary tests under `go test`.
package brokerfuzz
