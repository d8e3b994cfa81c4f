package audit

import (
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// The kernel logs a refusal before its domain: the access record waits,
// and goes to the watch of the pid that created the domain once that is
// logged; another process's domain goes nowhere; after Close nothing is
// handed on.
func TestReaderMatchesDomainsToWatches(t *testing.T) {
	r := &Reader{watches: map[int]*Watch{}, domains: map[uint64]*Watch{}}
	var got []wire.Denial
	w := r.Watch(22791, func(d wire.Denial, _ time.Time) { got = append(got, d) })
	now := time.Now()
	for _, line := range []string{realMakeReg, `audit(1.000:1): domain=77 blockers=fs.read_file path="/other"`,
		realDomain, `audit(1.000:2): domain=77 status=allocated mode=enforcing pid=4 uid=0`, realRead} {
		typ := uint16(typeLandlockAccess)
		if strings.Contains(line, "status=") {
			typ = typeLandlockDomain
		}
		rec, ok := parse(typ, []byte(line))
		if !ok {
			t.Fatalf("%s: not parsed", line)
		}
		r.take(rec, now)
	}
	if len(got) != 2 || got[0].Object != "/tmp/capout" || got[1].Object != "/root/.bashrc" || len(r.orphans) != 1 {
		t.Fatalf("handed %+v, orphans %d", got, len(r.orphans))
	}
	w.Close()
	rec, _ := parse(typeLandlockAccess, []byte(realRead))
	r.take(rec, now)
	if len(got) != 2 || len(r.watches) != 0 || len(r.domains) != 0 {
		t.Fatalf("after Close: %d handed, %d watches, %d domains", len(got), len(r.watches), len(r.domains))
	}
	// Orphans stay bounded.
	for range 3 * maxOrphans {
		r.take(rec, now)
	}
	if len(r.orphans) != maxOrphans {
		t.Fatalf("%d orphans", len(r.orphans))
	}
}
