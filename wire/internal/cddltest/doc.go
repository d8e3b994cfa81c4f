// Package cddltest is a small, test-only validator for the subset of CDDL
// (RFC 8610) that wire/warrant.cddl uses. It exists because no CDDL library
// is available to this module; it is imported only by tests.
//
// The subset: rules "name = type"; choices "a / b"; the prelude types
// tstr, bstr, uint, int, bool, true, false; text literals; integer ranges
// "lo..hi"; the control ".size" with an integer or a parenthesised range;
// maps "{ key: type, ? key: type }" with bareword or quoted text keys (a
// map is closed: no other key may appear); arrays with occurrence
// indicators "[* T]", "[+ T]", "[? T]", "[n*m T]" and positional entries
// "[a: T, b: U]". Comments run from ";" to the end of the line.
//
// Anything outside the subset is a parse error, never silently accepted.
// Array entries match greedily without backtracking, which is exact for
// the schemas in the subset (one repeated entry, or fixed entries).
//
// Values are the generic Go forms produced by decoding CBOR into any:
// uint64, int64, string, []byte, bool, []any and map[any]any.
package cddltest
