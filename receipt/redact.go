package receipt

import (
	"fmt"
	"slices"

	"warrant/wire"
)

// A matcher decides whether a rule matches at the start of w. The engine
// calls match only once w holds the rule's full window (width bytes) or
// the stream has ended, so the answer never depends on where chunks were
// cut. Before that it may ask cannot, with the bytes there are so far:
// true means match would find nothing at this place whatever bytes
// follow, so the engine passes on at once instead of holding the bytes
// until the window is complete (a near miss of a PEM header would
// otherwise hold back 32 KiB). cannot never says yes to a match.
type matcher struct {
	name     string
	lits     []string
	boundary bool // the byte before the match must not be a word byte
	width    int  // W: the most bytes match may look at
	match    func(w []byte) (n int, next cont)
	cannot   func(w []byte) bool // nil: only a full window decides
	hole     []byte              // the placeholder written instead of the match
}

// cont is what the engine still owes after a match whose secret may go
// on: the rest of an over-long token, or a PEM body without its END line.
type cont struct {
	class *byteClass // token continuation: consume class bytes, max at a time
	max   int
	pem   bool // PEM continuation: consume until the END line
}

func (c cont) active() bool { return c.class != nil || c.pem }

func (c cont) width() int {
	if c.pem {
		return pemWindow
	}
	return c.max + 1
}

// step consumes the next part of the secret at the start of w.
func (c cont) step(w []byte, full bool) (int, cont) {
	if c.pem {
		return pemBody(w, 0, full)
	}
	run := 0
	for run < len(w) && run <= c.max && c.class[w[run]] {
		run++
	}
	if run > c.max {
		return c.max, c
	}
	return run, cont{}
}

// litRule is a literal and the rule it belongs to.
type litRule struct {
	lit  string
	rule int
}

// Ruleset is an immutable set of redaction rules: the built-in credential
// shapes plus the exact secret values the broker supplies.
type Ruleset struct {
	rules   []matcher
	pre     prefilter
	byFirst [256][]litRule // literals by first byte, in rule order
	maxLit  int            // longest literal
	exact   int            // number of exact secret values
}

// NewRuleset returns the built-in rules plus one rule per exact secret
// value. A value shorter than MinSecret or longer than MaxSecret is
// refused: the first would redact ordinary text, the second would need an
// unbounded window.
func NewRuleset(secrets ...[]byte) (*Ruleset, error) {
	if len(secrets) > maxSecrets {
		return nil, fmt.Errorf("build ruleset: %d exact secrets, at most %d", len(secrets), maxSecrets)
	}
	rs := &Ruleset{exact: len(secrets)}
	rs.add(pemMatcher())
	for _, t := range builtinTokens {
		rs.add(t.matcher())
	}
	for i, s := range secrets {
		if len(s) < MinSecret || len(s) > MaxSecret {
			return nil, fmt.Errorf("build ruleset: exact secret %d is %d bytes, want %d..%d",
				i, len(s), MinSecret, MaxSecret)
		}
		rs.add(exactMatcher(string(s)))
	}
	return rs, nil
}

func (rs *Ruleset) add(m matcher) {
	idx := len(rs.rules)
	m.hole = []byte("[REDACTED:" + m.name + "]")
	rs.rules = append(rs.rules, m)
	for _, l := range m.lits {
		rs.pre.addLiteral(l, m.boundary)
		rs.byFirst[l[0]] = append(rs.byFirst[l[0]], litRule{lit: l, rule: idx})
		rs.maxLit = max(rs.maxLit, len(l))
	}
}

// ID names the built-in rules by digest; see rulesetID.
func (rs *Ruleset) ID() string { return rulesetID() }

// Exact reports how many exact secret values the ruleset holds.
func (rs *Ruleset) Exact() int { return rs.exact }

// Hit counts the matches of one rule type. It never carries the secret.
type Hit struct {
	Type  string `json:"type"`
	Count uint64 `json:"count"`
}

// Redact redacts a whole buffer at once. Streaming redaction of the same
// bytes, cut anywhere, gives exactly this output.
func (rs *Ruleset) Redact(raw []byte) ([]byte, []Hit, error) {
	var out []byte
	e := newEngine(rs)
	e.buf = append(e.buf, raw...)
	err := e.run(true, func(b []byte, _ int, _ bool) { out = append(out, b...) })
	if err != nil {
		return nil, nil, err
	}
	return out, e.hits(), nil
}

// Redactor redacts one stream as it arrives. Output passed to its sink is
// final: no later byte can change it.
type Redactor struct {
	e    *engine
	sink func(redacted []byte)
}

// NewRedactor returns a streaming redactor that hands redacted output to
// sink. sink must not keep the slice it is given.
func (rs *Ruleset) NewRedactor(sink func(redacted []byte)) *Redactor {
	return &Redactor{e: newEngine(rs), sink: sink}
}

func (r *Redactor) emit(out []byte, _ int, _ bool) {
	if len(out) > 0 {
		r.sink(out)
	}
}

// Write redacts p. After an error (EVIDENCE_BLOCKED) nothing more is ever
// released.
func (r *Redactor) Write(p []byte) (int, error) {
	if err := r.e.write(p, r.emit); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close releases what was held back for the window and returns the hits.
func (r *Redactor) Close() ([]Hit, error) {
	if err := r.e.run(true, r.emit); err != nil {
		return nil, err
	}
	return r.e.hits(), nil
}

// engine is the streaming redactor. Raw bytes wait in buf until no rule
// could still match across them; everything it emits is final.
type engine struct {
	rs      *Ruleset
	buf     []byte
	prev    byte // the raw byte just before buf[0], if hasPrev
	hasPrev bool
	state   cont
	counts  []uint64 // per rule
	rules   []int    // scratch: rules with a literal at one position
	err     error
	failed  func() // if set, called on failure while buf still holds what is dropped
}

// emitFunc receives redacted output in order, with the number of raw
// bytes it stands for. When verbatim is set, out is those raw bytes
// themselves; otherwise it is a placeholder (or nothing, for the rest of a
// secret already replaced).
type emitFunc func(out []byte, raw int, verbatim bool)

func newEngine(rs *Ruleset) *engine {
	return &engine{rs: rs, counts: make([]uint64, len(rs.rules))}
}

// write adds raw bytes and emits whatever can no longer be part of a match.
func (e *engine) write(p []byte, emit emitFunc) error {
	if e.err != nil {
		return e.err
	}
	e.buf = append(e.buf, p...)
	return e.run(false, emit)
}

// run emits every decided byte. If a rule fails, the engine is blocked for
// good and drops what it holds: raw bytes never pass through a failure.
func (e *engine) run(eof bool, emit emitFunc) (err error) {
	if e.err != nil {
		return e.err
	}
	defer func() {
		if r := recover(); r != nil {
			e.err = wire.Errorf(wire.CodeEvidenceBlocked, "the output redactor failed: %v", r)
			if e.failed != nil {
				e.failed()
			}
			e.buf = nil
			err = e.err
		}
	}()
	done := e.scan(eof, emit)
	if done > 0 {
		e.prev, e.hasPrev = e.buf[done-1], true
		e.buf = e.buf[:copy(e.buf, e.buf[done:])]
	}
	return nil
}

// scan walks buf and returns how many bytes of it are decided and emitted.
func (e *engine) scan(eof bool, emit emitFunc) int {
	buf, n, rs := e.buf, len(e.buf), e.rs
	complete := func(p, w int) bool { return eof || p+w <= n }
	// No match can start at or after safe that more bytes would not
	// complete (see pending); buf does not change during the scan.
	safe := n
	if !eof {
		safe = rs.pending(buf, n-(rs.maxLit-1))
	}
	r, c := 0, 0 // raw run start; positions < c decided
	for {
		if e.state.active() {
			w := e.state.width()
			if !complete(c, w) {
				break
			}
			k, next := e.state.step(buf[c:min(n, c+w)], c+w <= n)
			if k > 0 {
				emit(nil, k, false)
			}
			c += k
			r, e.state = c, next
			continue
		}
		p := rs.pre.candidate(buf, c)
		if p < 0 || p >= safe {
			c = max(c, safe)
			break
		}
		matched, wait := false, false
		for _, ri := range e.startingAt(p) {
			m := &rs.rules[ri]
			if m.boundary && e.wordBefore(p) {
				continue
			}
			if !complete(p, m.width) {
				if m.cannot != nil && m.cannot(buf[p:]) {
					continue
				}
				wait = true
				break
			}
			k, next := m.match(buf[p:min(n, p+m.width)])
			if k == 0 {
				continue
			}
			if p > r {
				emit(buf[r:p], p-r, true)
			}
			emit(m.hole, k, false)
			e.counts[ri]++
			c = p + k
			r, e.state, matched = c, next, true
			break
		}
		if wait {
			c = p
			break
		}
		if !matched {
			c = p + 1
		}
	}
	if c > r {
		emit(buf[r:c], c-r, true)
	}
	return c
}

// pending returns the first position from from on at which the bytes to
// the end of buf are a proper prefix of some rule's literal, or len(buf).
// Every match starts with a literal, so no match can begin before it that
// more bytes would complete: what comes before it is decided even though
// the stream goes on. Only those bytes are held back, so output that ends
// in ordinary text (a line, a prompt) is released as soon as it is
// written, for a live follower, instead of waiting for more output.
func (rs *Ruleset) pending(buf []byte, from int) int {
	for p := max(from, 0); p < len(buf); p++ {
		rest := buf[p:]
		for _, lr := range rs.byFirst[buf[p]] {
			if len(lr.lit) > len(rest) && lr.lit[:len(rest)] == string(rest) {
				return p
			}
		}
	}
	return len(buf)
}

// startingAt lists, in priority order, the rules with a literal at p.
func (e *engine) startingAt(p int) []int {
	e.rules = e.rules[:0]
	for _, lr := range e.rs.byFirst[e.buf[p]] {
		n := len(e.rules)
		if (n == 0 || e.rules[n-1] != lr.rule) && p+len(lr.lit) <= len(e.buf) &&
			string(e.buf[p:p+len(lr.lit)]) == lr.lit {
			e.rules = append(e.rules, lr.rule)
		}
	}
	return e.rules
}

func (e *engine) wordBefore(p int) bool {
	if p > 0 {
		return classWord[e.buf[p-1]]
	}
	return e.hasPrev && classWord[e.prev]
}

// hits reports the nonzero counts by rule type, in rule order.
func (e *engine) hits() []Hit {
	var hits []Hit
	for i, n := range e.counts {
		if n == 0 {
			continue
		}
		name := e.rs.rules[i].name
		if j := slices.IndexFunc(hits, func(h Hit) bool { return h.Type == name }); j >= 0 {
			hits[j].Count += n
		} else {
			hits = append(hits, Hit{Type: name, Count: n})
		}
	}
	return hits
}
