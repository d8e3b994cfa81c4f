package profile

import (
	"fmt"
	"strings"
	"time"

	"warrant/wire"
)

// Grace is the time between SIGTERM and SIGKILL for a group being ended.
const Grace = 2 * time.Second

// OpenFiles is RLIMIT_NOFILE for every profile.
const OpenFiles = 1024

// Limits is one profile's bundle (docs/architecture.md §3.4). Memory and
// Pids are applied by the broker's per-action cgroups where the host has
// the controllers (broker/lifecycle), never by the launcher: a host
// without them runs the action with the limit absent and says so.
type Limits struct {
	Wall       time.Duration // wall time before TERM → KILL
	CPUSeconds uint64        // RLIMIT_CPU
	Retain     int64         // bytes retained per stream: head and tail each
	HardOutput int64         // observed bytes on one stream that end the group
	FileSize   uint64        // RLIMIT_FSIZE
	Memory     uint64        // bytes of memory and swap together (memory.max, memory.swap.max 0)
	Pids       uint64        // processes and threads at once (pids.max)
}

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

var table = [...]Limits{
	wire.ProfileShort: {Wall: 10 * time.Second, CPUSeconds: 10, Retain: 64 * kib,
		HardOutput: 64 * mib, FileSize: 64 * mib, Memory: 2 * gib, Pids: 256},
	wire.ProfileStandard: {Wall: 120 * time.Second, CPUSeconds: 120, Retain: 256 * kib,
		HardOutput: 1 * gib, FileSize: 1 * gib, Memory: 4 * gib, Pids: 1024},
	wire.ProfileLong: {Wall: 1800 * time.Second, CPUSeconds: 1800, Retain: 1 * mib,
		HardOutput: 16 * gib, FileSize: 8 * gib, Memory: 8 * gib, Pids: 4096},
}

// Of returns the limits of p. p must be a valid profile; wire decoding
// guarantees that for any decoded request.
func Of(p wire.Profile) Limits {
	if p == 0 || int(p) >= len(table) {
		panic(fmt.Sprintf("profile: internal error: invalid profile %d", p))
	}
	return table[p]
}

// Longer names the profiles with more wall time than p, in order, each
// with its wall time: "standard (2m0s), long (30m0s)"; "" for the
// longest. A timeout says it, since a longer profile is a new approval.
func Longer(p wire.Profile) string {
	var names []string
	for q := wire.Profile(1); int(q) < len(table); q++ {
		if table[q].Wall > Of(p).Wall {
			names = append(names, fmt.Sprintf("%s (%s)", q, table[q].Wall))
		}
	}
	return strings.Join(names, ", ")
}
