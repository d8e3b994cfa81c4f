package wire

import (
	"reflect"
	"testing"
)

// channelOf returns the one channel that carries messages of type t.
func channelOf(t MsgType) Channel {
	for c := AgentChannel; c <= LauncherChannel; c++ {
		if c.allows(t) {
			return c
		}
	}
	panic("wire: internal error: no channel carries " + t.String())
}

// TestSamplesRoundTrip checks that every sample encodes, decodes on its own
// channel to an equal value, and re-encodes to the same bytes.
func TestSamplesRoundTrip(t *testing.T) {
	for _, s := range samples() {
		b, err := Encode(s.msg)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, err := Decode(b, channelOf(s.msg.Type()))
		if err != nil {
			t.Fatalf("%s: decode: %v", s.name, err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(s.msg)) {
			t.Errorf("%s: decoded %#v, want %#v", s.name, got, s.msg)
		}
		again, err := Encode(got)
		if err != nil || string(again) != string(b) {
			t.Errorf("%s: re-encode differs (%v)", s.name, err)
		}
	}
}

// normalize re-encodes m with the package codec and decodes it without the
// canonical check, so that nil and empty lists compare equal.
func normalize(m Message) Message {
	b, err := encMode.Marshal(m)
	if err != nil {
		panic("wire: internal error: " + err.Error())
	}
	out := newMessage(m.Type())
	if err := decMode.Unmarshal(b, out); err != nil {
		panic("wire: internal error: " + err.Error())
	}
	return out
}
