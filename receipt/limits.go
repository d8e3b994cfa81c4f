package receipt

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// What enforced a limit: a closed set.
const (
	EnforcedByBroker   = "broker"    // the broker's own timer or byte count ended the group (wall time, output)
	EnforcedByRlimit   = "rlimit"    // the launcher set it before Ready
	EnforcedByCgroupV2 = "cgroup_v2" // the controller in the broker's delegated cgroup v2 subtree
	EnforcedByCgroupV1 = "cgroup_v1" // the controller's cgroup v1 hierarchy
	EnforcedByNone     = "none"      // not applied: the action never reached Ready, or the host has no such controller
	EnforcedByUnknown  = "unknown"   // the broker cannot know what happened
)

var enforcers = []string{EnforcedByBroker, EnforcedByRlimit, EnforcedByCgroupV2, EnforcedByCgroupV1,
	EnforcedByNone, EnforcedByUnknown}

// oldEnforcers are the single words of receipts made before each limit
// had its own entry.
var oldEnforcers = []string{EnforcedByRlimit, EnforcedByNone, EnforcedByUnknown}

func byCgroup(by string) bool { return by == EnforcedByCgroupV2 || by == EnforcedByCgroupV1 }

// Enforcement says what enforced each limit. It encodes as an object with
// one entry per limit. A receipt made before limits were enforced one by
// one carries a single word for all of them instead ("rlimit", "none",
// "unknown"); that decodes into All and encodes back as the same word,
// so old logs still verify.
type Enforcement struct {
	All string // the single word of an older receipt; "" in every new one

	Wall      string // wall time and its grace: the broker
	CPU       string // RLIMIT_CPU
	FileSize  string // RLIMIT_FSIZE
	OpenFiles string // RLIMIT_NOFILE
	Output    string // the hard output budget: the broker
	Memory    string // the cgroup memory limit (memory and swap), or none
	Pids      string // the cgroup process-count limit, or none
}

type enforcementJSON struct {
	Wall      string `json:"wall"`
	CPU       string `json:"cpu"`
	FileSize  string `json:"fileSize"`
	OpenFiles string `json:"openFiles"`
	Output    string `json:"output"`
	Memory    string `json:"memory"`
	Pids      string `json:"pids"`
}

// Uniform is the enforcement of an action whose every limit was enforced
// the same way: none (it never reached the launcher's Ready) or unknown.
func Uniform(by string) Enforcement {
	return Enforcement{Wall: by, CPU: by, FileSize: by, OpenFiles: by, Output: by, Memory: by, Pids: by}
}

// Launched is the enforcement of an action the launcher confined: wall
// time and output by the broker, the rlimits by the launcher, memory and
// pids as the host's cgroups did (EnforcedByNone where they did not).
func Launched(memory, pids string) Enforcement {
	return Enforcement{Wall: EnforcedByBroker, CPU: EnforcedByRlimit, FileSize: EnforcedByRlimit,
		OpenFiles: EnforcedByRlimit, Output: EnforcedByBroker, Memory: memory, Pids: pids}
}

func (e Enforcement) json() enforcementJSON {
	return enforcementJSON{Wall: e.Wall, CPU: e.CPU, FileSize: e.FileSize, OpenFiles: e.OpenFiles,
		Output: e.Output, Memory: e.Memory, Pids: e.Pids}
}

// MarshalJSON encodes the single word of an older receipt, or the object.
func (e Enforcement) MarshalJSON() ([]byte, error) {
	if e.All != "" {
		return json.Marshal(e.All)
	}
	return json.Marshal(e.json())
}

// UnmarshalJSON decodes either form, refusing unknown fields.
func (e *Enforcement) UnmarshalJSON(b []byte) error {
	*e = Enforcement{}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.All)
	}
	var j enforcementJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	*e = Enforcement{Wall: j.Wall, CPU: j.CPU, FileSize: j.FileSize, OpenFiles: j.OpenFiles,
		Output: j.Output, Memory: j.Memory, Pids: j.Pids}
	return nil
}

// String is the single word when every limit was enforced the same way,
// else each limit with what enforced it.
func (e Enforcement) String() string {
	if e.All != "" {
		return e.All
	}
	j := e.json()
	all := []string{j.Wall, j.CPU, j.FileSize, j.OpenFiles, j.Output, j.Memory, j.Pids}
	if len(slices.Compact(slices.Clone(all))) == 1 {
		return j.Wall
	}
	names := []string{"wall", "cpu", "fileSize", "openFiles", "output", "memory", "pids"}
	parts := make([]string, len(all))
	for i := range all {
		parts[i] = names[i] + " " + all[i]
	}
	return strings.Join(parts, ", ")
}

// validate checks the enforcement against the figures it vouches for: a
// memory or process-count figure is present exactly when a cgroup
// enforced it.
func (l *Limits) validate() error {
	e := l.EnforcedBy
	if e.All != "" {
		if !slices.Contains(oldEnforcers, e.All) || e != (Enforcement{All: e.All}) || l.MemoryBytes != 0 || l.Pids != 0 {
			return errorf("limits: enforcedBy %q", e.All)
		}
		return nil
	}
	for _, by := range []string{e.Wall, e.CPU, e.FileSize, e.OpenFiles, e.Output, e.Memory, e.Pids} {
		if !slices.Contains(enforcers, by) {
			return errorf("limits: enforcedBy %q is not one of %s", by, strings.Join(enforcers, ", "))
		}
	}
	if byCgroup(e.Memory) != (l.MemoryBytes > 0) || byCgroup(e.Pids) != (l.Pids > 0) {
		return errorf("limits: a memory or process-count figure is present exactly when a cgroup enforced it")
	}
	return nil
}

// LimitMemory is the one limit whose reaching ends an action.
const LimitMemory = "memory"

// Usage is what the action's cgroups counted once it was over. A counter
// is present exactly when its limit was enforced by a cgroup (a peak may
// also be absent where the kernel keeps none).
type Usage struct {
	MemoryPeakBytes *uint64 `json:"memoryPeakBytes,omitempty"`
	OOMKills        *uint64 `json:"oomKills,omitempty"`      // processes the kernel killed at the memory limit
	PidsPeak        *uint64 `json:"pidsPeak,omitempty"`      // processes and threads at most at once
	PidsLimitHits   *uint64 `json:"pidsLimitHits,omitempty"` // forks refused at the limit (pids.events max)
}

// validateUsage checks limitReached and usage against what was enforced
// and observed.
func (r *Receipt) validateUsage() error {
	e, u := r.Limits.EnforcedBy, r.Usage
	switch {
	case r.LimitReached != "" && r.LimitReached != LimitMemory:
		return errorf("limitReached %q", r.LimitReached)
	case u != nil && r.Start == nil:
		return errorf("usage is counted only for a started action")
	case u != nil && ((u.OOMKills != nil) != byCgroup(e.Memory) || (u.PidsLimitHits != nil) != byCgroup(e.Pids) ||
		(u.MemoryPeakBytes != nil && !byCgroup(e.Memory)) || (u.PidsPeak != nil && !byCgroup(e.Pids))):
		return errorf("usage: a counter is present exactly when a cgroup enforced its limit")
	case r.LimitReached == LimitMemory && (u == nil || u.OOMKills == nil || *u.OOMKills == 0):
		return errorf("limitReached memory without an OOM kill counted")
	case u != nil && u.OOMKills != nil && *u.OOMKills > 0 && r.LimitReached != LimitMemory:
		return errorf("an OOM kill counted without limitReached memory")
	}
	return nil
}
