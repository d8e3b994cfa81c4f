package receipt

import (
	"warrant/internal/closed"
	"warrant/wire"
)

// StreamName names one output stream of a target.
type StreamName uint8

// The streams.
const (
	Stdout StreamName = iota + 1
	Stderr
)

var streamNames = []string{"", "stdout", "stderr"}

// Wire is the stream's name on the wire (an OutputChunk's stream).
func (s StreamName) Wire() wire.OutputStream {
	if s == Stderr {
		return wire.Stderr
	}
	return wire.Stdout
}

func (s StreamName) String() string               { return closed.String(streamNames, s) }
func (s StreamName) MarshalText() ([]byte, error) { return closed.Marshal(streamNames, s) }
func (s *StreamName) UnmarshalText(b []byte) error {
	return closed.Unmarshal(streamNames, b, s)
}

// Truncation says why a stream's evidence does not hold all of it. The
// zero value means nothing was left out and is encoded as an absent field.
type Truncation uint8

// The truncation reasons.
const (
	// TruncRetention: the middle of the stream was dropped; head and tail
	// are retained (the profile's Retain each).
	TruncRetention Truncation = iota + 1
	// TruncOutputLimit: the stream passed the profile's hard output
	// budget; the caller ends the group as output_limit_reaped.
	TruncOutputLimit
	// TruncEvidenceBlocked: the redactor failed; nothing it held or read
	// afterwards was released (EVIDENCE_BLOCKED).
	TruncEvidenceBlocked
)

var truncationNames = []string{"", "retention_limit", "output_limit", "evidence_blocked"}

func (t Truncation) String() string               { return closed.String(truncationNames, t) }
func (t Truncation) MarshalText() ([]byte, error) { return closed.Marshal(truncationNames, t) }
func (t *Truncation) UnmarshalText(b []byte) error {
	return closed.Unmarshal(truncationNames, b, t)
}

// Chunk is the record of one Write: its raw and redacted sizes and the
// running digests at its end. Each digest covers the stream from its first
// byte through this chunk, so every record commits to all earlier ones: a
// chain that costs no extra pass over the bytes.
type Chunk struct {
	Index          uint64 `json:"index"`
	RawBytes       uint64 `json:"rawBytes"`
	RedactedBytes  uint64 `json:"redactedBytes"`
	RawHMAC        string `json:"rawHmacSha256"`
	RedactedSHA256 string `json:"redactedSha256"`
}

// Range is the half-open byte range [Start, End) of the redacted stream.
type Range struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
}

// StreamEvidence is everything a receipt says about one output stream.
// Byte offsets of Head and Tail are in the redacted stream; ObservedBytes
// counts raw bytes read from the pipe. RedactedBytes = RetainedBytes +
// DroppedBytes always holds; WithheldBytes counts raw bytes that never
// produced redacted output because the redactor failed.
type StreamEvidence struct {
	Stream         StreamName `json:"stream"`
	RulesetID      string     `json:"rulesetId"`
	ExactSecrets   int        `json:"exactSecrets"`
	Chunks         uint64     `json:"chunks"`
	ChunkRecords   []Chunk    `json:"chunkRecords"` // the first and last few
	ObservedBytes  uint64     `json:"observedBytes"`
	RedactedBytes  uint64     `json:"redactedBytes"`
	RetainedBytes  uint64     `json:"retainedBytes"`
	DroppedBytes   uint64     `json:"droppedBytes"`
	WithheldBytes  uint64     `json:"withheldBytes,omitempty"`
	Head           Range      `json:"head"`
	Tail           Range      `json:"tail"`
	Truncation     Truncation `json:"truncation,omitempty"`
	Retain         uint64     `json:"retain"`
	Budget         uint64     `json:"budget"`
	RawHMAC        string     `json:"rawHmacSha256"`
	RedactedSHA256 string     `json:"redactedSha256"`
	RetainedSHA256 string     `json:"retainedSha256"` // of head then tail: the stored body
	Redactions     []Hit      `json:"redactions,omitempty"`
}

// validate checks the evidence's own arithmetic.
func (s *StreamEvidence) validate() error {
	switch {
	case !closed.Valid(streamNames, s.Stream):
		return errorf("stream: invalid name %d", s.Stream)
	case s.RedactedBytes != s.RetainedBytes+s.DroppedBytes:
		return errorf("%s: redacted %d != retained %d + dropped %d", s.Stream, s.RedactedBytes, s.RetainedBytes, s.DroppedBytes)
	case s.Head.Start != 0 || s.Head.End > s.Tail.Start || s.Tail.End != s.RedactedBytes ||
		(s.Head.End-s.Head.Start)+(s.Tail.End-s.Tail.Start) != s.RetainedBytes:
		return errorf("%s: retained ranges do not add up", s.Stream)
	case (s.DroppedBytes > 0 || s.WithheldBytes > 0) && s.Truncation == 0:
		return errorf("%s: bytes left out without a truncation reason", s.Stream)
	case uint64(len(s.ChunkRecords)) > s.Chunks || len(s.ChunkRecords) > 2*keepChunks:
		return errorf("%s: %d chunk records for %d chunks", s.Stream, len(s.ChunkRecords), s.Chunks)
	}
	return firstErr(checkHex("rawHmacSha256", s.RawHMAC), checkHex("redactedSha256", s.RedactedSHA256),
		checkHex("retainedSha256", s.RetainedSHA256))
}

// Captured is a closed stream: its evidence and the retained (redacted)
// head and tail bytes, which the store keeps apart from the signed receipt
// so that retention can delete them.
type Captured struct {
	Evidence StreamEvidence
	Head     []byte
	Tail     []byte
}

// Projection returns the agent-facing projection of c (see Project).
func (c *Captured) Projection(maxChars int) wire.Stream { return Project(c, maxChars) }
