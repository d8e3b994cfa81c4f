package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"sort"

	"github.com/fxamacker/cbor/v2"
)

// This file builds CBOR by hand for the rejection tests and the invalid
// golden vectors: the package encoder cannot produce what the decoder must
// refuse.

// genericMode decodes one well-formed, valid CBOR item into generic values
// (uint64, int64, string, []byte, bool, []any, map[any]any) without the
// package's structural caps, so that the schema checks and the mutations
// see exactly what was sent.
var genericMode = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IntDec:           cbor.IntDecConvertNone,
		UTF8:             cbor.UTF8RejectInvalid,
		DefaultMapType:   reflect.TypeFor[map[any]any](),
		MaxNestedLevels:  64,
		MaxArrayElements: 1 << 20,
		MaxMapPairs:      1 << 20,
	}.DecMode()
	if err != nil {
		panic("wire: internal error: " + err.Error())
	}
	return dm
}()

func generic(b []byte) (any, error) {
	var v any
	err := genericMode.Unmarshal(b, &v)
	return v, err
}

// raw is inserted into the output verbatim.
type raw []byte

// pair is one map entry of an ordered map.
type pair struct {
	k string
	v any
}

// ordered is a map whose entries are written in the given order.
type ordered []pair

// head returns the minimal CBOR head of major type major and argument n.
func head(major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return []byte{m | byte(n)}
	case n <= 0xff:
		return []byte{m | 24, byte(n)}
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16([]byte{m | 25}, uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32([]byte{m | 26}, uint32(n))
	}
	return binary.BigEndian.AppendUint64([]byte{m | 27}, n)
}

// enc encodes v deterministically (map keys sorted bytewise by their
// encodings), except for raw and ordered values.
func enc(v any) []byte {
	switch x := v.(type) {
	case raw:
		return x
	case nil:
		return []byte{0xf6}
	case bool:
		if x {
			return []byte{0xf5}
		}
		return []byte{0xf4}
	case int:
		if x < 0 {
			return head(1, uint64(-1-x))
		}
		return head(0, uint64(x))
	case int64:
		return enc(int(x))
	case uint64:
		return head(0, x)
	case string:
		return append(head(3, uint64(len(x))), x...)
	case []byte:
		return append(head(2, uint64(len(x))), x...)
	case []any:
		out := head(4, uint64(len(x)))
		for _, e := range x {
			out = append(out, enc(e)...)
		}
		return out
	case ordered:
		out := head(5, uint64(len(x)))
		for _, p := range x {
			out = append(append(out, enc(p.k)...), enc(p.v)...)
		}
		return out
	case map[any]any:
		type kv struct{ k, v []byte }
		var kvs []kv
		for k, val := range x {
			kvs = append(kvs, kv{enc(k), enc(val)})
		}
		sort.Slice(kvs, func(i, j int) bool { return bytes.Compare(kvs[i].k, kvs[j].k) < 0 })
		out := head(5, uint64(len(x)))
		for _, p := range kvs {
			out = append(append(out, p.k...), p.v...)
		}
		return out
	}
	panic(fmt.Sprintf("wire: internal error: enc %T", v))
}

// mustEncode encodes a valid message.
func mustEncode(m Message) []byte {
	b, err := Encode(m)
	if err != nil {
		panic("wire: internal error: " + err.Error())
	}
	return b
}

// envelopeOf returns the generic envelope of a valid message.
func envelopeOf(m Message) map[any]any {
	v, err := generic(mustEncode(m))
	if err != nil {
		panic("wire: internal error: " + err.Error())
	}
	return v.(map[any]any)
}

// mutate encodes m, lets f edit its generic body, and re-encodes it
// deterministically.
func mutate(m Message, f func(body map[any]any)) []byte {
	env := envelopeOf(m)
	f(env["body"].(map[any]any))
	return enc(env)
}

// message builds an envelope around a body given as any encodable value.
func message(t string, body any) []byte {
	return enc(ordered{{"body", body}, {"type", t}})
}

// frame prefixes b with a 4-byte big-endian length n.
func frame(n uint32, b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, n), b...)
}

// strs converts strings to a generic array.
func strs(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
