package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"warrant/wire"
)

// egressFlag collects --egress: the flag repeated, each value one item
// or a comma-separated list of them.
type egressFlag []string

func (f *egressFlag) String() string { return strings.Join(*f, ",") }

func (f *egressFlag) Set(v string) error {
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			return errors.New("an empty entry (write HOST:PORT,HOST:PORT)")
		}
		*f = append(*f, item)
	}
	return nil
}

// asked is what `broker run --egress` asks for: entries and preset
// names, as wire.CheckEgressAsked takes them (the broker expands the
// presets and says which exist).
func (f egressFlag) asked() ([]string, error) {
	if err := wire.CheckEgressAsked(f); err != nil {
		return nil, UsageError{"--egress: " + err.Error()}
	}
	return f, nil
}

// granted is what `broker approve --egress` grants: exact entries,
// canonical, sorted, each once; "none" alone grants none. A preset name
// is refused: a lease names its hosts.
func (f egressFlag) granted() ([]string, error) {
	if slices.Contains(f, "none") {
		if len(f) > 1 {
			return nil, UsageError{"--egress none grants no network access; it goes alone"}
		}
		return nil, nil
	}
	out := make([]string, 0, len(f))
	for _, item := range f {
		e, err := wire.ParseEgressEntry(item)
		if err != nil {
			if wire.EgressPreset(item) {
				return nil, UsageError{"--egress " + item + ": approve grants exact HOST:PORT entries, not a preset's name (the card lists the preset's hosts)"}
			}
			return nil, UsageError{"--egress: " + err.Error()}
		}
		out = append(out, e)
	}
	slices.Sort(out)
	if out = slices.Compact(out); len(out) > wire.MaxEgress {
		return nil, UsageError{fmt.Sprintf("--egress: %d entries; a lease grants at most %d", len(out), wire.MaxEgress)}
	}
	return out, nil
}
