package probe

import (
	"fmt"
	"path/filepath"

	"warrant/broker/lifecycle"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// The checks that the broker records what the sandbox refused (docs/json.md,
// Denials): the attackers' TCP connects must be counted by the filter
// (socket AF_INET SOCK_STREAM, from both), and their metadata changes
// (chmod) of the file outside must be recorded by the broker, refused as
// outside the writable scope, under the path the broker resolved. A file
// write that Landlock refuses is not among them: it is recorded only from
// the kernel's audit records, which a broker reads only as root where
// audit is on (broker/internal/audit), or as a hint.
const (
	RecordSocket   = "denial_record_socket"
	RecordMetadata = "denial_record_metadata"
)

// denialChecks judges run's record of refusals: each check succeeds when
// the record holds what it wants.
func (h *probeHost) denialChecks(run lifecycle.Result) []Check {
	victim, err := filepath.EvalSymlinks(filepath.Join(h.outside, probeprog.MetaFile))
	if err != nil {
		victim = filepath.Join(h.outside, probeprog.MetaFile)
	}
	want := []struct {
		name, what string
		match      func(*wire.Denial) bool
		min        uint64
	}{
		{RecordSocket, "socket(AF_INET SOCK_STREAM) counted by the filter", func(d *wire.Denial) bool {
			return d.Source == wire.SourceFilterCount && d.Call == "socket" && d.Object == "AF_INET SOCK_STREAM" &&
				d.Rule == wire.RuleNoNetwork
		}, uint64(len(probeprog.Attackers))},
		{RecordMetadata, "a metadata write of " + victim + " refused by the broker as outside the writable scope", func(d *wire.Denial) bool {
			return d.Source == wire.SourceBroker && d.Effect == wire.EffectMetadata && d.Object == victim &&
				d.Rule == wire.RuleOutsideScope
		}, 1},
	}
	var checks []Check
	for _, w := range want {
		c := Check{Name: w.name, From: "host", Allowed: true, Expected: "succeeds", Observed: "failed"}
		var n uint64
		if run.Denials != nil {
			for i := range run.Denials.Records {
				if w.match(&run.Denials.Records[i]) {
					n += run.Denials.Records[i].Count
				}
			}
		}
		c.Evidence = fmt.Sprintf("want %s at least %d time(s); the run's record holds it %d time(s)", w.what, w.min, n)
		if run.Denials == nil {
			c.Evidence += " (nothing watched the run)"
		}
		if n >= w.min {
			c.Observed, c.Pass = "succeeded", true
		}
		checks = append(checks, c)
	}
	return checks
}
