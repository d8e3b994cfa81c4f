// Package denial collects what one action's sandbox refused, as the
// broker observes it (docs/json.md, "denials"): a Log counts every
// refused call exactly, in the total and under its class — the same
// call (of the same socket family) refused by the same rule, seen by the
// same source, whatever its object — and keeps the first wire.MaxDenials
// kinds (a class and one object) as samples, each with its count and the
// time it was first seen. A target chooses objects (paths, socket family
// numbers), so it can fill the samples with cheap refusals; it cannot
// fill the classes, whose parts come from closed tables (bounded by
// wire.MaxDenialCounts; broker/internal/metadata proves its own within
// it), so a refusal after such a flood is still counted under its own
// class. Memory is bounded by both caps whatever the target does. An
// object (a path the target may have chosen) is kept as text that every
// format carries exactly and a terminal shows as it is
// (wire.DenialObject: invalid bytes, control characters and invisible
// format characters such as bidi overrides and zero-width spaces as
// \xNN, a backslash doubled, at most 1 KiB).
//
// The sources that add to a Log (wire.DenialSource): the metadata server
// (broker/internal/metadata) for the calls it answers itself, "broker",
// and for the calls the launcher's seccomp filter hands it only to be
// refused and counted, "filter-count"; its observer of write-intent
// opens, "hint" (the target's path, --write-hints); and, for a root
// broker where audit is on, Landlock's own refusals as the kernel's audit
// records name them, "kernel-audit" (broker/internal/audit). A Log says
// which sources watched its action, so that an empty list reads as
// "nothing refused was seen by these", never as "nothing was refused".
//
// It decides nothing: what it holds is evidence for the receipt and the
// result, and advice for a person (broker/view says the remedy).
package denial
