// Package fuzz holds the native fuzz targets for the wire protocol, the
// receipt code and the Seatbelt profile writer; the broker's targets are
// in fuzz/brokerfuzz, so that nothing here links SQLite (see there). Seed
// corpora live in each package's testdata/fuzz and also run as ordinary
// tests under `go test`; TestFuzzCorporaNotEmpty checks both packages.
package fuzz
