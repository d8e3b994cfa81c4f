package receipt

import (
	"bytes"
	"strings"
	"testing"

	"warrant/wire"
)

// A file of checkpoints splits into exactly its notes, with or without
// the empty line between them, and each opens under the key; a file
// that is not made of whole signed notes is refused.
func TestParseCheckpoints(t *testing.T) {
	k := testKeys(t)
	c, err := NewChain(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	var notes [][]byte
	for i := range 3 {
		if _, err := c.Seal(testReceipt("r"+string(rune('a'+i)), wire.Exited)); err != nil {
			t.Fatal(err)
		}
		cp, err := c.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		notes = append(notes, cp)
	}
	for name, file := range map[string][]byte{
		"one":       notes[0],
		"separated": bytes.Join(notes, []byte("\n")),
		"witness":   append(bytes.Join(notes, []byte("\n")), '\n'),
		"appended":  bytes.Join(notes, nil),
	} {
		got, err := ParseCheckpoints(file)
		want := notes
		if name == "one" {
			want = notes[:1]
		}
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %v, %d notes", name, err, len(got))
		}
		for i := range got {
			tr, err := OpenCheckpoint(got[i], k.Public())
			if !bytes.Equal(got[i], want[i]) || err != nil || tr.N != int64(i+1) {
				t.Fatalf("%s: note %d is %q (%v)", name, i, got[i], err)
			}
		}
	}
	text := string(notes[0])
	for name, file := range map[string]string{
		"empty":         "",
		"no signature":  strings.SplitAfter(text, "\n\n")[0],
		"no newline":    strings.TrimSuffix(text, "\n"),
		"leading blank": "\n" + text,
		"garbage":       text + "\n\nnot a note\n",
	} {
		if got, err := ParseCheckpoints([]byte(file)); err == nil {
			t.Fatalf("%s: parsed as %q", name, got)
		}
	}
}
