package denial

import (
	"slices"
	"sync"
	"time"

	"warrant/wire"
)

// Log is one action's refused calls. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	sources []wire.DenialSource      // in the wire's order
	classes map[wire.DenialCount]int // into counts, by class (Count 0)
	counts  []wire.DenialCount
	index   map[kind]int // into records
	records []wire.Denial
	total   uint64
}

// kind is what makes two refusals the same record: their class and
// object.
type kind struct {
	class  wire.DenialCount // Count 0
	object string
}

// New returns an empty Log watched by sources.
func New(sources ...wire.DenialSource) *Log {
	l := &Log{classes: map[wire.DenialCount]int{}, index: map[kind]int{}}
	for _, s := range sources {
		l.Watch(s)
	}
	return l
}

// Watch adds s to the sources that watch the action; they are listed in
// the wire's order, each once, whatever order they were added in.
func (l *Log) Watch(s wire.DenialSource) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i, found := slices.BinarySearch(l.sources, s); !found {
		l.sources = slices.Insert(l.sources, i, s)
	}
}

// Add counts one refused call, seen at at, under its class and its
// kind's record: a new class gets a count while fewer than
// wire.MaxDenialCounts are kept (its parts come from closed tables, so
// that bound is not reached: a call past it would be in the total
// alone), a new kind a record while fewer than wire.MaxDenials are kept.
// d's Count and FirstUnixNs are ignored. A source that is not watching is
// an internal error.
func (l *Log) Add(d wire.Denial, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.sources, d.Source) {
		panic("denial: internal error: a refusal from " + d.Source.String() + ", which does not watch this action")
	}
	l.total++
	d.Object = wire.DenialObject(d.Object)
	class := d.Class()
	if i, ok := l.classes[class]; ok {
		l.counts[i].Count++
	} else if len(l.counts) < wire.MaxDenialCounts {
		l.classes[class] = len(l.counts)
		class.Count = 1
		l.counts = append(l.counts, class)
		class.Count = 0
	} else {
		return
	}
	k := kind{class: class, object: d.Object}
	if i, ok := l.index[k]; ok {
		l.records[i].Count++
		return
	}
	if len(l.records) == wire.MaxDenials {
		return
	}
	d.Count, d.FirstUnixNs = 1, at.UnixNano()
	l.index[k] = len(l.records)
	l.records = append(l.records, d)
}

// Denials returns what the Log holds now.
func (l *Log) Denials() *wire.Denials {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := &wire.Denials{Sources: make([]string, len(l.sources)), Total: l.total}
	for i, s := range l.sources {
		d.Sources[i] = s.String()
	}
	if len(l.counts) > 0 {
		d.Counts = append([]wire.DenialCount(nil), l.counts...)
	}
	if len(l.records) > 0 {
		d.Records = append([]wire.Denial(nil), l.records...)
	}
	return d
}
