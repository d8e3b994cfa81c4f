// Package fuzz holds the native fuzz targets for every decoder and parser
// in warrant. Their seed corpora live in testdata/fuzz and also run as
// ordinary tests under `go test`.
package fuzz
