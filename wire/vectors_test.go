package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// The golden vectors in testdata/vectors are generated from the Go values
// in samples_test.go and vectors_invalid_test.go. After changing a wire
// type or a vector, regenerate them with
//
//	go test ./wire -run TestVectors -update
//
// and review the diff: a changed valid vector is a wire-format change.
var update = flag.Bool("update", false, "rewrite testdata/vectors from the Go definitions")

const vectorDir = "testdata/vectors"

// vector is the on-disk form of one golden vector (see
// testdata/vectors/README.md).
type vector struct {
	Name    string `json:"name"`
	Channel string `json:"channel"`
	Framed  bool   `json:"framed"`
	Expect  string `json:"expect"`
	CDDL    string `json:"cddl"`
	Note    string `json:"note,omitempty"`
	Hex     string `json:"hex"`
	Diag    string `json:"diag,omitempty"`
}

// expectations is the closed set of labels, each with the pattern that
// this implementation's error must match, so a vector cannot pass by
// failing for some other reason.
var expectations = map[string]*regexp.Regexp{
	"ok":                    nil,
	"malformed-envelope":    regexp.MustCompile(`: envelope: `),
	"unknown-field":         regexp.MustCompile(`unknown field`),
	"missing-field":         regexp.MustCompile(`: empty$|invalid value 0$|not in canonical form$`),
	"duplicate-key":         regexp.MustCompile(`duplicate map key`),
	"indefinite-length":     regexp.MustCompile(`indefinite-length .* isn't allowed`),
	"trailing-bytes":        regexp.MustCompile(`extraneous data`),
	"invalid-utf8":          regexp.MustCompile(`invalid UTF-8`),
	"nul-byte":              regexp.MustCompile(`contains a NUL byte$`),
	"too-deep":              regexp.MustCompile(`exceeded max nested level`),
	"too-many-elements":     regexp.MustCompile(`exceeded max number of (elements|key-value pairs)`),
	"cap-exceeded":          regexp.MustCompile(`exceeds the cap of \d+$`),
	"unknown-enum":          regexp.MustCompile(`unknown value "`),
	"wrong-channel":         regexp.MustCompile(`is not allowed on the \w+ channel$`),
	"not-canonical":         regexp.MustCompile(`not in canonical form$`),
	"wrong-type":            regexp.MustCompile(`cannot unmarshal`),
	"tag":                   regexp.MustCompile(`CBOR tag isn't allowed`),
	"invalid-value":         regexp.MustCompile(`: empty$|not a clean absolute path$|want a 32-byte SHA-256 digest$|must be at least 1$|escapes the workspace$|must be a directory inside it$|write it as "[^"]*"$|must be relative to the workspace$|duplicate name "|is not the spawn protocol \d+$|: the workspace itself$| is not after "[^"]*"$| is not followed$`),
	"oversize-frame":        regexp.MustCompile(`frame: \d+ bytes exceeds the cap of \d+$`),
	"frame-length-mismatch": regexp.MustCompile(`frame: header says \d+ bytes, datagram holds \d+$`),
	"short-frame":           regexp.MustCompile(`frame: \d+ bytes is shorter than its header$`),
	"empty-frame":           regexp.MustCompile(`frame: empty$`),
}

// schemaClasses are the labels whose data model warrant.cddl must refuse.
var schemaClasses = []string{"malformed-envelope", "unknown-field", "missing-field",
	"unknown-enum", "wrong-channel", "wrong-type", "too-many-elements", "cap-exceeded"}

// frameCap is the frame cap of a channel.
func frameCap(ch Channel) int {
	if ch == SpawnChannel || ch == LauncherChannel {
		return MaxLauncherFrame
	}
	return MaxAgentFrame
}

func parseChannel(s string) (Channel, bool) {
	i := slices.Index(channelNames, s)
	return Channel(i), i > 0
}

// allSpecs returns every vector definition: one or more valid vectors per
// message type, a few valid frames, and the invalid vectors.
func allSpecs() []spec {
	var out []spec
	for _, s := range samples() {
		out = append(out, spec{name: s.name, channel: channelOf(s.msg.Type()), data: mustEncode(s.msg), expect: "ok"})
	}
	for _, m := range []Message{&Query{Handle: "act-1"}, sampleSpawn(true), &ExecFailed{Errno: 2}} {
		b, err := EncodeFrame(m)
		if err != nil {
			panic("wire: internal error: " + err.Error())
		}
		out = append(out, spec{name: "frame-" + strings.ReplaceAll(m.Type().String(), "_", "-"),
			channel: channelOf(m.Type()), framed: true, data: b, expect: "ok"})
	}
	return append(out, invalidSpecs()...)
}

// toVector renders a spec in its on-disk form.
func toVector(t *testing.T, s spec) vector {
	v := vector{Name: s.name, Channel: s.channel.String(), Framed: s.framed, Expect: s.expect,
		Note: s.note, Hex: hex.EncodeToString(s.data), CDDL: "n/a"}
	item := s.data
	if s.framed {
		item = nil
		if len(s.data) > frameHeader {
			item = s.data[frameHeader:]
		}
	}
	if g, err := generic(item); err == nil {
		v.CDDL = "accept"
		if schema(t).Validate(s.channel.String()+"-message", g) != nil {
			v.CDDL = "reject"
		}
	}
	if d, err := cbor.Diagnose(item); err == nil && len(d) <= 2048 {
		v.Diag = d
	}
	return v
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors in %s (%v); run: go test ./wire -run TestVectors -update", vectorDir, err)
	}
	var out []vector
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if filepath.Base(f) != v.Name+".json" {
			t.Fatalf("%s: holds vector %q", f, v.Name)
		}
		out = append(out, v)
	}
	return out
}

// TestVectorsUpToDate regenerates the vectors (with -update, writes them)
// and fails if testdata/vectors differs from the Go definitions.
func TestVectorsUpToDate(t *testing.T) {
	want := map[string][]byte{}
	for _, s := range allSpecs() {
		b, err := json.MarshalIndent(toVector(t, s), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		name := s.name + ".json"
		if _, dup := want[name]; dup {
			t.Fatalf("vector %s defined twice", s.name)
		}
		want[name] = append(b, '\n')
	}
	if *update {
		old, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(vectorDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(vectorDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	have, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s: no longer defined; run: go test ./wire -run TestVectors -update", f)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		b := want[name]
		got, err := os.ReadFile(filepath.Join(vectorDir, name))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: out of date; run: go test ./wire -run TestVectors -update", name)
		}
	}
}

// TestVectors decodes every vector on disk as labelled: valid ones decode
// and re-encode byte for byte, invalid ones fail for the labelled reason
// and return no message.
func TestVectors(t *testing.T) {
	seenType := map[MsgType]bool{}
	seenExpect := map[string]bool{}
	for _, v := range loadVectors(t) {
		pat, known := expectations[v.Expect]
		ch, okCh := parseChannel(v.Channel)
		data, err := hex.DecodeString(v.Hex)
		if !known || !okCh || err != nil {
			t.Fatalf("%s: bad vector (expect %q, channel %q, hex %v)", v.Name, v.Expect, v.Channel, err)
		}
		seenExpect[v.Expect] = true
		m, err := decodeVector(data, v.Framed, ch)
		if v.Expect == "ok" {
			if err != nil {
				t.Errorf("%s: %v", v.Name, err)
				continue
			}
			seenType[m.Type()] = true
			again, err := Encode(m)
			if v.Framed {
				again, err = EncodeFrame(m)
			}
			if err != nil || !bytes.Equal(again, data) {
				t.Errorf("%s: re-encoding differs (%v)", v.Name, err)
			}
			continue
		}
		switch {
		case err == nil:
			t.Errorf("%s: decoded; want %s", v.Name, v.Expect)
		case m != nil:
			t.Errorf("%s: returned a message with error %v", v.Name, err)
		case !errors.Is(err, ErrMalformed):
			t.Errorf("%s: error %v does not wrap ErrMalformed", v.Name, err)
		case !pat.MatchString(err.Error()):
			t.Errorf("%s: want %s, got: %v", v.Name, v.Expect, err)
		}
	}
	for mt := range messageTypes {
		if !seenType[mt] {
			t.Errorf("message type %s has no valid vector", mt)
		}
	}
	for e := range expectations {
		if !seenExpect[e] {
			t.Errorf("rejection class %s has no vector", e)
		}
	}
}

// decodeVector decodes a vector the way a peer would receive it. A framed
// vector goes through DecodeFrame, and through ReadFrame too when its
// length header is within the cap: both must agree.
func decodeVector(data []byte, framed bool, ch Channel) (Message, error) {
	if !framed {
		return Decode(data, ch)
	}
	m, err := DecodeFrame(data, frameCap(ch), ch)
	r := bytes.NewReader(data)
	m2, err2 := ReadFrame(r, frameCap(ch), ch)
	switch {
	case err == nil && (err2 != nil || r.Len() != 0 || !reflect.DeepEqual(m, m2)):
		return nil, errors.New("ReadFrame disagrees with DecodeFrame")
	case err != nil && err2 == nil:
		return nil, errors.New("ReadFrame accepts what DecodeFrame refuses")
	}
	return m, err
}

// TestVectorsCDDL checks the vectors' cddl labels against warrant.cddl:
// every valid vector is accepted and every schema-level rejection refused.
func TestVectorsCDDL(t *testing.T) {
	for _, v := range loadVectors(t) {
		want := "reject"
		switch {
		case v.Expect == "ok":
			want = "accept"
		case !slices.Contains(schemaClasses, v.Expect):
			continue
		}
		data, _ := hex.DecodeString(v.Hex)
		if v.Framed {
			data = data[frameHeader:]
		}
		g, err := generic(data)
		if err != nil {
			if v.Expect == "ok" || v.CDDL != "n/a" {
				t.Errorf("%s: not one CBOR item: %v", v.Name, err)
			}
			continue
		}
		err = schema(t).Validate(v.Channel+"-message", g)
		if err == nil && v.Expect == "ok" {
			err = validateBody(t, g)
		}
		if got := map[bool]string{true: "accept", false: "reject"}[err == nil]; got != want || v.CDDL != want {
			t.Errorf("%s (%s): warrant.cddl says %s (%v), label says %s; want %s", v.Name, v.Expect, got, err, v.CDDL, want)
		}
	}
}

// validateBody checks the body of a generic envelope against the CDDL rule
// that warrant.cddl names for its type.
func validateBody(t *testing.T, g any) error {
	env, _ := g.(map[any]any)
	bodies := map[string]string{}
	if err := envelopes(schema(t), schema(t).Rules["message"], bodies); err != nil {
		return err
	}
	typ, _ := env["type"].(string)
	rule, ok := bodies[typ]
	if !ok {
		return errors.New("no envelope rule for type " + typ)
	}
	return schema(t).Validate(rule, env["body"])
}
