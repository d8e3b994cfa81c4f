package fuzz

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"warrant/wire"
)

// The wire fuzz targets check, for every decoder, that accepted input is
// the one canonical encoding of what it decoded to (Encode(decoded) ==
// input, and decoding that again gives an equal value), that a refusal
// returns no message, and that nothing panics. Their committed seed
// corpora in testdata/fuzz/FuzzWire*/ are generated from the golden
// vectors in wire/testdata/vectors; after regenerating those, run
//
//	go test ./fuzz -run TestWireCorpus -wire-corpus
//
// Run one target with, for example,
//
//	go test -run '^$' -fuzz '^FuzzWireDecodeAgent$' -fuzztime 30s ./fuzz
var writeWireCorpus = flag.Bool("wire-corpus", false, "rewrite the FuzzWire* seed corpora from wire/testdata/vectors")

const vectorDir = "../wire/testdata/vectors"

var channels = []wire.Channel{wire.AgentChannel, wire.OperatorChannel, wire.ReplyChannel, wire.SpawnChannel, wire.LauncherChannel}

// frameCap is the frame cap the peers of channel ch use.
func frameCap(ch wire.Channel) int {
	if ch == wire.SpawnChannel || ch == wire.LauncherChannel {
		return wire.MaxLauncherFrame
	}
	return wire.MaxAgentFrame
}

// fuzzChannel maps a fuzzed byte to a channel, including the invalid
// channels 0 and 6 that no caller should pass but that must fail closed.
func fuzzChannel(b uint8) wire.Channel { return wire.Channel(b % 7) }

// seedMessages are hand-written f.Add seeds, besides the committed corpus.
func seedMessages() []wire.Message {
	return []wire.Message{
		&wire.Query{Handle: "act-1"}, &wire.Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 60},
		&wire.OK{}, &wire.Refused{Code: wire.CodeIdentityDrift, Detail: "cwd moved"},
		&wire.ExecFailed{Errno: 2},
	}
}

// checkDecode is the shared property of the Decode targets.
func checkDecode(t *testing.T, data []byte, ch wire.Channel) {
	m, err := wire.Decode(data, ch)
	if err != nil {
		if m != nil {
			t.Fatalf("error %v came with a message %#v", err, m)
		}
		if !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		return
	}
	again, err := wire.Encode(m)
	if err != nil {
		t.Fatalf("accepted %x but cannot encode it: %v", data, err)
	}
	if !bytes.Equal(again, data) {
		t.Fatalf("accepted %x, which re-encodes as %x", data, again)
	}
	m2, err := wire.Decode(again, ch)
	if err != nil || !reflect.DeepEqual(m, m2) {
		t.Fatalf("second decode differs: %#v, %v", m2, err)
	}
	for _, other := range channels {
		if other != ch {
			if m3, err := wire.Decode(data, other); err == nil || m3 != nil {
				t.Fatalf("%s accepted on both %s and %s", m.Type(), ch, other)
			}
		}
	}
}

func fuzzDecode(f *testing.F, ch wire.Channel) {
	for _, m := range seedMessages() {
		if b, err := wire.Encode(m); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data, ch) })
}

func FuzzWireDecodeAgent(f *testing.F)    { fuzzDecode(f, wire.AgentChannel) }
func FuzzWireDecodeOperator(f *testing.F) { fuzzDecode(f, wire.OperatorChannel) }
func FuzzWireDecodeReply(f *testing.F)    { fuzzDecode(f, wire.ReplyChannel) }
func FuzzWireDecodeSpawn(f *testing.F)    { fuzzDecode(f, wire.SpawnChannel) }
func FuzzWireDecodeLauncher(f *testing.F) { fuzzDecode(f, wire.LauncherChannel) }

func addFrameSeeds(f *testing.F) {
	for _, m := range seedMessages() {
		if b, err := wire.EncodeFrame(m); err == nil {
			f.Add(b, uint8(0))
			f.Add(b, uint8(2))
			f.Add(b, uint8(4))
			f.Add(b, uint8(5))
		}
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint8(1))
}

// FuzzWireDecodeFrame checks DecodeFrame: an accepted datagram is exactly
// EncodeFrame of its message.
func FuzzWireDecodeFrame(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, c uint8) {
		ch := fuzzChannel(c)
		m, err := wire.DecodeFrame(data, frameCap(ch), ch)
		if err != nil {
			if m != nil {
				t.Fatalf("error %v came with a message %#v", err, m)
			}
			return
		}
		again, err := wire.EncodeFrame(m)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted %x, which re-encodes as %x (%v)", data, again, err)
		}
		checkDecode(t, data[4:], ch)
	})
}

// FuzzWireReadFrame checks ReadFrame on a stream: it never consumes more
// than one header and one capped body, an accepted frame is exactly the
// bytes it consumed, and a refusal returns no message.
func FuzzWireReadFrame(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, c uint8) {
		ch := fuzzChannel(c)
		r := bytes.NewReader(data)
		m, err := wire.ReadFrame(r, frameCap(ch), ch)
		n := len(data) - r.Len() // the bytes ReadFrame consumed
		if n > 4+frameCap(ch) {
			t.Fatalf("read %d bytes for one frame", n)
		}
		if err != nil {
			if m != nil {
				t.Fatalf("error %v came with a message %#v", err, m)
			}
			return
		}
		again, err := wire.EncodeFrame(m)
		if err != nil || !bytes.Equal(again, data[:n]) {
			t.Fatalf("accepted %x, which re-encodes as %x (%v)", data[:n], again, err)
		}
		checkDecode(t, data[4:n], ch)
	})
}

// vector is the part of a golden vector the corpus generator needs.
type vector struct {
	Name    string `json:"name"`
	Channel string `json:"channel"`
	Framed  bool   `json:"framed"`
	Hex     string `json:"hex"`
}

// TestWireCorpus (with -wire-corpus) writes one seed file per golden
// vector into each FuzzWire* target that can consume it: unframed vectors
// to the Decode target of their channel, and every vector, framed, to the
// frame targets. Without the flag it checks the vectors are readable.
func TestWireCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden vectors in %s: %v", vectorDir, err)
	}
	seeds := map[string]map[string]string{} // target -> file name -> content
	add := func(target, name, content string) {
		if seeds[target] == nil {
			seeds[target] = map[string]string{}
		}
		seeds[target]["vector-"+name] = "go test fuzz v1\n" + content
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := hex.DecodeString(v.Hex)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		c := -1
		for _, ch := range channels {
			if ch.String() == v.Channel {
				c = int(ch)
			}
		}
		if c < 0 {
			t.Fatalf("%s: unknown channel %q", path, v.Channel)
		}
		framed := data
		if !v.Framed {
			name := "FuzzWireDecode" + string(v.Channel[0]-'a'+'A') + v.Channel[1:]
			add(name, v.Name, fmt.Sprintf("[]byte(%q)\n", data))
			framed = append([]byte{byte(len(data) >> 24), byte(len(data) >> 16), byte(len(data) >> 8), byte(len(data))}, data...)
		}
		seed := fmt.Sprintf("[]byte(%q)\nbyte(%d)\n", framed, c)
		add("FuzzWireDecodeFrame", v.Name, seed)
		add("FuzzWireReadFrame", v.Name, seed)
	}
	if !*writeWireCorpus {
		return
	}
	for target, files := range seeds {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Replace the generated seeds; keep inputs the fuzzer saved.
		old, _ := filepath.Glob(filepath.Join(dir, "vector-*"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
