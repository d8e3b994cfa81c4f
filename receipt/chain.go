package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// Entry is one stored log entry: a signed envelope (a receipt or a
// deletion record) and, for a receipt, its retained output body — the
// redacted heads and tails of its streams, in stream order. The body is
// stored apart from the envelope so that retention can delete it; the
// signed receipt keeps its digest. Body is nil once pruned.
type Entry struct {
	Index    int64
	Envelope []byte
	Body     []byte
}

// Chain appends to the receipt log: it sets each statement's log index
// and the digest of the previous statement, signs it, and keeps the
// Merkle tree's stored hashes for checkpoints. It is not safe for
// concurrent use; the broker serialises appends with its journal.
type Chain struct {
	keys   *Keys
	n      int64
	prev   string
	hashes hashReader // the Merkle tree's stored hashes
}

// NewChain resumes the log after the stored entries, which must be the
// whole log in order; it does not verify them (that is Verify's job).
func NewChain(keys *Keys, stored []Entry) (*Chain, error) {
	c := &Chain{keys: keys}
	for i, e := range stored {
		if e.Index != int64(i) {
			return nil, fmt.Errorf("resume chain: entry %d has index %d", i, e.Index)
		}
		payload, _, err := openEnvelope(e.Envelope, keys.Public())
		if err != nil {
			return nil, fmt.Errorf("resume chain: entry %d: %w", i, err)
		}
		if err := c.add(e.Envelope, payload); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Len is the number of entries in the log.
func (c *Chain) Len() int64 { return c.n }

func (c *Chain) add(envelope, payload []byte) error {
	h, err := tlog.StoredHashes(c.n, envelope, c.hashes)
	if err != nil {
		return fmt.Errorf("append to log: %w", err)
	}
	c.hashes = append(c.hashes, h...)
	c.n++
	c.prev = digest(payload)
	return nil
}

// hashReader is a tlog.HashReader over a Merkle tree's stored hashes.
type hashReader []tlog.Hash

func (h hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(h)) {
			return nil, fmt.Errorf("read hash %d: beyond the log", x)
		}
		out[i] = h[x]
	}
	return out, nil
}

// Seal completes r with its streams, log index and previous digest, signs
// it, and returns the entry to store. r must satisfy Validate.
func (c *Chain) Seal(r *Receipt, streams ...*Captured) (Entry, error) {
	r.Streams = nil
	var body []byte
	for _, s := range streams {
		r.Streams = append(r.Streams, s.Evidence)
		body = append(append(body, s.Head...), s.Tail...)
	}
	r.LogIndex, r.Previous = c.n, c.prev
	pred, err := r.Encode()
	if err != nil {
		return Entry{}, fmt.Errorf("seal receipt %s: %w", r.ID, err)
	}
	return c.append(statement(ReceiptPredicate, receiptSubjects(r), pred), body)
}

func (c *Chain) append(payload, body []byte) (Entry, error) {
	env := c.keys.seal(PayloadType, payload)
	e := Entry{Index: c.n, Envelope: env, Body: body}
	if err := c.add(env, payload); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// digest is the chain digest of a statement: lowercase hex SHA-256.
func digest(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}
