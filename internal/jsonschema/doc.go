// Package jsonschema validates JSON documents against the JSON Schemas
// (draft 2020-12) of docs/schemas, which describe every object the broker
// command prints with --json (docs/json.md). It implements only the subset
// those schemas use: type (one or a list), properties, required,
// additionalProperties and unevaluatedProperties (false only), items,
// enum, const, pattern, format "date-time", oneOf, allOf and $ref (within
// a file, "#/$defs/NAME", or to another file of the set,
// "FILE#/$defs/NAME"); $schema, $id, $defs, title, description and
// examples are annotations.
//
// # Invariants
//
//   - Fail closed: a schema that uses any other keyword, or an
//     additionalProperties or unevaluatedProperties other than false, is
//     refused when the set is loaded, so no constraint is silently
//     ignored.
//   - format "date-time" is asserted, not annotated: the string must
//     parse with time.RFC3339Nano and be in UTC ("Z"), the convention's
//     timestamp.
//   - unevaluatedProperties false allows the properties declared by the
//     schema itself and by the schemas its allOf and $ref reach at the
//     same instance location (computed from the schemas, which is what
//     the standard's evaluation gives for schemas without conditionals).
//
// It is used by tests; it decides nothing at run time.
package jsonschema
