package goals

import (
	"bytes"
	"testing"

	"warrant/receipt"
)

// FuzzGoalDecode feeds arbitrary goal documents, and arbitrary content
// for every file they name, to Decode and the oracle. Properties: a
// document that does not decode yields no value; one that decodes
// re-encodes to a canonical form that decodes to the same bytes; and with
// no receipts and no statements, no step that asks for a receipt, an
// artefact or an operator statement is ever done.
func FuzzGoalDecode(f *testing.F) {
	f.Add(`{"title":"t","workspace":"/w","steps":[{"id":"a","outputs":["out/x"],"criteria":[{"kind":"artefact","path":"out/x"}]},`+
		`{"id":"b","depends_on":["a"],"criteria":[{"kind":"file","path":"v.json","json_pointer":"/v/0","equals":1.0},`+
		`{"kind":"receipt","command":{"executable":"make","argv":["test"]}}]}]}`, []byte(`{"v":[1]}`))
	f.Fuzz(func(t *testing.T, doc string, content []byte) {
		s, err := Decode(doc, "")
		if err != nil {
			if s != nil {
				t.Fatal("a failed decode returned a value")
			}
			return
		}
		enc := s.Encode()
		again, err := Decode(string(enc), "")
		if err != nil || !bytes.Equal(again.Encode(), enc) {
			t.Fatalf("the canonical form does not decode to itself: %v", err)
		}
		read := func(rel string, _ bool) (receipt.ReadBack, []byte) {
			n := uint64(len(content))
			return receipt.ReadBack{Path: rel, State: receipt.FilePresent, Size: &n, SHA256: Digest(content)}, content
		}
		v := Evaluate(Input{Goal: "g", Revision: 1, Spec: s, Digest: Digest(enc), Read: read})
		for i, st := range s.Steps {
			for _, c := range st.Criteria {
				if c.Kind != KindFile && v.Steps[i].Done {
					t.Fatalf("step %s is done without evidence", st.ID)
				}
			}
		}
	})
}
