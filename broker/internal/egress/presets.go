package egress

import (
	"fmt"
	"slices"
	"strings"

	"warrant/broker/internal/statedir"
	"warrant/wire"
)

// maxPresetsFile bounds the presets file: a person writes it, a few
// lines long.
const maxPresetsFile = 1 << 20

// ReadPresets reads the operator's named presets from path (<state>/egress),
// one a line:
//
//	# comment
//	npm = registry.npmjs.org:443
//	go  = proxy.golang.org:443, sum.golang.org:443
//
// A name is spelled as wire.EgressPreset takes it (a lower-case letter,
// then lower-case letters, digits and hyphens, at most 32 bytes); each entry is canonicalised
// (wire.ParseEgressEntry), the list sorted, each entry once, at most
// wire.MaxEgress. A missing file is no presets. A bad line, or a name
// twice, is an error that names the line. The file is the operator's
// (statedir.ReadOperatorFile): a regular file, not a symlink, of the
// broker's uid, writable by no one else, at most 1 MiB.
func ReadPresets(path string) (map[string][]string, error) {
	text, err := statedir.ReadOperatorFile("egress presets", path, maxPresetsFile)
	if err != nil {
		return nil, err
	}
	presets, err := parsePresets(string(text))
	if err != nil {
		return nil, fmt.Errorf("read egress presets %s: %w", path, err)
	}
	return presets, nil
}

func parsePresets(text string) (map[string][]string, error) {
	presets := map[string][]string{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		line, _, _ = strings.Cut(line, "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, list, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("line %d: want name = host:port, host:port", n)
		}
		if !wire.EgressPreset(name) {
			return nil, fmt.Errorf("line %d: preset name %q: want a lower-case letter, then lower-case letters, digits and hyphens, at most 32 bytes", n, name)
		}
		if _, twice := presets[name]; twice {
			return nil, fmt.Errorf("line %d: preset %q is defined twice", n, name)
		}
		var entries []string
		for e := range strings.SplitSeq(list, ",") {
			c, err := wire.ParseEgressEntry(strings.TrimSpace(e))
			if err != nil {
				return nil, fmt.Errorf("line %d: preset %q: %w", n, name, err)
			}
			entries = append(entries, c)
		}
		slices.Sort(entries)
		if entries = slices.Compact(entries); len(entries) > wire.MaxEgress {
			return nil, fmt.Errorf("line %d: preset %q: %d entries exceeds the cap of %d", n, name, len(entries), wire.MaxEgress)
		}
		presets[name] = entries
	}
	return presets, nil
}

// Expand returns the grant an asked list means: each item is an entry
// ("host:port", canonicalised by wire.ParseEgressEntry) or the name of a
// preset, which stands for its entries. The result is canonical, sorted,
// each entry once, at most wire.MaxEgress; nil for an empty list. An item
// that is neither is an error that names it and the presets there are.
func Expand(asked []string, presets map[string][]string) ([]string, error) {
	var out []string
	for _, item := range asked {
		if list, ok := presets[item]; ok {
			for _, e := range list {
				c, err := wire.ParseEgressEntry(e)
				if err != nil {
					return nil, fmt.Errorf("egress preset %q: %w", item, err)
				}
				out = append(out, c)
			}
			continue
		}
		if !wire.EgressPreset(item) {
			c, err := wire.ParseEgressEntry(item)
			if err != nil {
				return nil, fmt.Errorf("%w (nor a preset: %s)", err, known(presets))
			}
			out = append(out, c)
			continue
		}
		return nil, fmt.Errorf("egress %q: no preset of that name (%s); an entry is host:port", item, known(presets))
	}
	slices.Sort(out)
	if out = slices.Compact(out); len(out) > wire.MaxEgress {
		return nil, fmt.Errorf("egress: %d entries exceeds the cap of %d", len(out), wire.MaxEgress)
	}
	return out, nil
}

// known lists the presets, for an error.
func known(presets map[string][]string) string {
	if len(presets) == 0 {
		return "no presets are defined in <state>/egress"
	}
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return "presets: " + strings.Join(names, ", ")
}
