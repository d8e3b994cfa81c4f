// Package fuzz holds the native fuzz targets for the wire protocol, the
// receipt code and the Seatbelt profile writer; the broker's targets
// (shebang parsing, admission) are beside their parsers in
// broker/internal/identity, which is internal to broker/ and links no
// SQLite. Seed corpora live in each package's testdata/fuzz and also run
// as ordinary tests under `go test`; TestFuzzCorporaNotEmpty checks both
// places.
package fuzz
