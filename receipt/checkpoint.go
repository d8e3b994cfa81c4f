package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoints are signed notes (golang.org/x/mod/sumdb/note) over the
// text
//
//	warrant receipt log
//	<N>
//	<base64 RFC 6962 root hash of the first N entries>
//
// signed with the receipt key under the note key name CheckpointKeyName.
// A note's signed text never begins with "DSSEv1 ", so a checkpoint
// signature can never be mistaken for a DSSE one, or the reverse.
const (
	checkpointOrigin  = "warrant receipt log"
	CheckpointKeyName = "warrant-receipts"
)

// noteSigner signs notes with the receipt key.
type noteSigner struct {
	priv ed25519.PrivateKey
	hash uint32
}

func (s noteSigner) Name() string                    { return CheckpointKeyName }
func (s noteSigner) KeyHash() uint32                 { return s.hash }
func (s noteSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// NoteVerifier returns the signed-note verifier of pub, for checkpoints.
func NoteVerifier(pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := note.NewEd25519VerifierKey(CheckpointKeyName, pub)
	if err != nil {
		return nil, fmt.Errorf("checkpoint verifier: %w", err)
	}
	return note.NewVerifier(vkey)
}

// Checkpoint signs the current size and root of the log.
func (c *Chain) Checkpoint() ([]byte, error) {
	root, err := tlog.TreeHash(c.n, c.hashes)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	v, err := NoteVerifier(c.keys.Public())
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("%s\n%d\n%s\n", checkpointOrigin, c.n, base64.StdEncoding.EncodeToString(root[:]))
	return note.Sign(&note.Note{Text: text}, noteSigner{priv: c.keys.priv, hash: v.KeyHash()})
}

// openCheckpoint verifies a checkpoint's signature and parses its tree.
func openCheckpoint(msg []byte, v note.Verifier) (tlog.Tree, error) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("open checkpoint: %w", err)
	}
	// A checkpoint carries exactly one signature, the broker's; and note
	// tolerates non-zero padding bits in signature base64, while a
	// checkpoint has exactly one encoding.
	if len(n.Sigs) != 1 || len(n.UnverifiedSigs) != 0 {
		return tlog.Tree{}, fmt.Errorf("open checkpoint: %d signatures by unknown keys beside %d by the broker", len(n.UnverifiedSigs), len(n.Sigs))
	}
	for _, s := range n.Sigs {
		if _, err := base64.StdEncoding.Strict().DecodeString(s.Base64); err != nil {
			return tlog.Tree{}, fmt.Errorf("open checkpoint: signature not in canonical base64")
		}
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[0] != checkpointOrigin || lines[3] != "" {
		return tlog.Tree{}, fmt.Errorf("open checkpoint: malformed text")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return tlog.Tree{}, fmt.Errorf("open checkpoint: malformed size %q", lines[1])
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return tlog.Tree{}, fmt.Errorf("open checkpoint: malformed root hash")
	}
	t := tlog.Tree{N: size}
	copy(t.Hash[:], raw)
	return t, nil
}

// OpenCheckpoint verifies a checkpoint under pub and returns the tree it
// signs: its size and root.
func OpenCheckpoint(msg []byte, pub ed25519.PublicKey) (tlog.Tree, error) {
	v, err := NoteVerifier(pub)
	if err != nil {
		return tlog.Tree{}, err
	}
	return openCheckpoint(msg, v)
}

// ParseCheckpoints splits a file of checkpoints into their notes: one
// note, or many, each followed by an empty line (a witness file) or not
// (`broker receipts checkpoint >> FILE`). A note is text lines, an empty
// line, and signature lines beginning "— "; a text line never begins so,
// which is where one note ends and the next begins. It checks the shape
// only; Verify checks the signatures and trees.
func ParseCheckpoints(data []byte) ([][]byte, error) {
	var notes [][]byte
	start, sigs := 0, 0
	inText := true
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			return nil, fmt.Errorf("parse checkpoints: byte %d: a line without its newline", off)
		}
		line := data[off : off+end]
		next := off + end + 1
		switch {
		case inText && len(line) == 0:
			if off == start {
				return nil, fmt.Errorf("parse checkpoints: byte %d: an empty line where a checkpoint should begin", off)
			}
			inText = false
		case inText:
		case len(line) == 0 && sigs > 0: // the empty line after a note
			notes = append(notes, data[start:off])
			start, sigs, inText = next, 0, true
		case bytes.HasPrefix(line, []byte("— ")):
			sigs++
		case sigs > 0: // the next note, without an empty line before it
			notes = append(notes, data[start:off])
			start, sigs, inText = off, 0, true
		default:
			return nil, fmt.Errorf("parse checkpoints: byte %d: not a signature line", off)
		}
		off = next
	}
	switch {
	case sigs > 0:
		notes = append(notes, data[start:])
	case start != len(data):
		return nil, fmt.Errorf("parse checkpoints: the last checkpoint has no signature")
	case len(notes) == 0:
		return nil, fmt.Errorf("parse checkpoints: no checkpoint")
	}
	return notes, nil
}
