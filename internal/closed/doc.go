// Package closed implements the closed enums of wire and receipt: each is
// a uint8 numbered from 1 with a table of names indexed by value. Zero and
// values beyond the table are never valid, so a missing field cannot
// decode to a default, and an unknown name is an error, not a default.
package closed
