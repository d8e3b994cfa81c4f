package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// Structural caps enforced by the decoder before any value is built.
const (
	maxDepth    = 8    // nesting of arrays and maps
	maxArray    = 1024 // elements in one array (argv is capped lower)
	maxMapPairs = 64   // entries in one map (every map here is a struct)
)

var (
	decMode cbor.DecMode
	encMode cbor.UserBufferEncMode
)

func init() {
	var err error
	decMode, err = cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   maxDepth,
		MaxArrayElements:  maxArray,
		MaxMapPairs:       maxMapPairs,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		UTF8:              cbor.UTF8RejectInvalid,
		IntDec:            cbor.IntDecConvertNone,
		NaN:               cbor.NaNDecodeForbidden,
		Inf:               cbor.InfDecodeForbidden,
		BignumTag:         cbor.BignumTagForbidden,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		TextUnmarshaler:   cbor.TextUnmarshalerTextString,
	}.DecMode()
	if err != nil {
		panic("wire: internal error: decode options: " + err.Error())
	}
	encMode, err = cbor.EncOptions{
		Sort:          cbor.SortCoreDeterministic,
		ShortestFloat: cbor.ShortestFloat16,
		IndefLength:   cbor.IndefLengthForbidden,
		TagsMd:        cbor.TagsForbidden,
		TextMarshaler: cbor.TextMarshalerTextString,
		NilContainers: cbor.NilContainerAsEmpty,
	}.UserBufferEncMode()
	if err != nil {
		panic("wire: internal error: encode options: " + err.Error())
	}
}

// A Message is one body that can travel in an envelope. The set is sealed:
// only the types in this package implement it.
type Message interface {
	Type() MsgType
	validate() error
}

// cborMajorMap is the major type of a CBOR map (RFC 8949 §3.1).
const cborMajorMap = 5

// envelope is the outer shape of every message.
type envelope struct {
	Type MsgType         `cbor:"type"`
	Body cbor.RawMessage `cbor:"body"`
}

// ErrMalformed is wrapped by every decode error, so callers can answer
// ARGUMENTS_INVALID without inspecting the detail.
var ErrMalformed = errors.New("malformed message")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Encode returns the canonical encoding of m. It refuses to encode a value
// that its own decoder would reject.
func Encode(m Message) ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.Type(), err)
	}
	return marshal(m)
}

// marshal encodes m, valid or not, in its envelope.
func marshal(m Message) ([]byte, error) {
	body, err := encMode.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.Type(), err)
	}
	return encMode.Marshal(envelope{Type: m.Type(), Body: body})
}

// Decode strictly decodes one message that must belong to channel ch. On
// error it returns a nil Message and an error wrapping ErrMalformed.
func Decode(data []byte, ch Channel) (Message, error) {
	var env envelope
	if err := decMode.Unmarshal(data, &env); err != nil {
		return nil, malformed("envelope: %v", err)
	}
	if env.Type == 0 || len(env.Body) == 0 || env.Body[0]>>5 != cborMajorMap {
		return nil, malformed("envelope: want a map of a type and a body map")
	}
	if !ch.allows(env.Type) {
		return nil, malformed("message type %s is not allowed on the %s channel", env.Type, ch)
	}
	m := newMessage(env.Type)
	if err := decMode.Unmarshal(env.Body, m); err != nil {
		return nil, malformed("%s: %v", env.Type, err)
	}
	if err := m.validate(); err != nil {
		return nil, malformed("%s: %v", env.Type, err)
	}
	if err := canonical(data, &env, m); err != nil {
		return nil, malformed("%s: %v", env.Type, err)
	}
	return m, nil
}

// canonical requires data, decoded as env and m, to be what marshal(m)
// makes: env.Body m's encoding, and data env's around it. Both are encoded
// into one buffer the frame's size, so that a new process (a launcher)
// allocates its buffer once rather than growing pooled ones and copying
// each result: its first touch of a page is a fault, 10–20 µs on some
// hosts.
func canonical(data []byte, env *envelope, m Message) error {
	if env.Type != m.Type() { // newMessage's map makes them equal; marshal(m) would use m's
		return errNotCanonical
	}
	buf := bytes.NewBuffer(make([]byte, 0, len(data)))
	for _, c := range []struct {
		v    any
		want []byte
	}{{m, env.Body}, {env, data}} {
		buf.Reset()
		if err := encMode.MarshalToBuffer(c.v, buf); err != nil { // validated: a failure is a bug
			return fmt.Errorf("encode: %w", err)
		}
		if !bytes.Equal(buf.Bytes(), c.want) {
			return errNotCanonical
		}
	}
	return nil
}

var errNotCanonical = errors.New("not in canonical form")

// Canonical returns the core-deterministic CBOR encoding of any value built
// from wire types. Digests (fingerprints, policy digests) are taken over it.
func Canonical(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return b, nil
}

// DecodeCanonical strictly decodes into v the canonical encoding of a
// wire value, as Canonical wrote it: the broker reads its stored values
// (identities, results) back under the same rules as frames — duplicate
// keys, unknown fields, indefinite lengths, tags and invalid UTF-8 are
// refused, and data must re-encode to exactly itself. On error v may be
// partly written and must be discarded; the error wraps ErrMalformed.
func DecodeCanonical(data []byte, v any) error {
	if err := decMode.Unmarshal(data, v); err != nil {
		return malformed("%T: %v", v, err)
	}
	again, err := Canonical(v)
	if err != nil {
		return malformed("%T: %v", v, err)
	}
	if !bytes.Equal(again, data) {
		return malformed("%T: not in canonical form", v)
	}
	return nil
}

// newMessage returns a pointer to a fresh zero value of the body type of t.
func newMessage(t MsgType) Message {
	rt, ok := messageTypes[t]
	if !ok {
		panic(fmt.Sprintf("wire: internal error: no body type for %s", t))
	}
	return reflect.New(rt).Interface().(Message)
}

// Prime encodes and decodes, once, a value of each of ts in which every
// field is set, so that the codec's per-type tables are built before a
// message of one of those types arrives: in a new process the first decode
// of a SpawnRequest cost about 0.3 ms more than the next. The launcher
// primes while its request has not yet come. An error means the sample
// could not make the round trip; nothing else depends on it.
func Prime(ts ...MsgType) error {
	for _, t := range ts {
		m := newMessage(t)
		fill(reflect.ValueOf(m).Elem(), fillDepth)
		body, err := encMode.Marshal(m)
		var frame []byte
		if err == nil {
			frame, err = encMode.Marshal(envelope{Type: t, Body: body})
		}
		var env envelope
		if err == nil {
			err = decMode.Unmarshal(frame, &env)
		}
		if err == nil {
			err = decMode.Unmarshal(env.Body, newMessage(t))
		}
		if err != nil {
			return fmt.Errorf("prime %s: %w", t, err)
		}
	}
	return nil
}

// fillDepth bounds fill's recursion: every field, element and pointer is a
// level, and the deepest message is far shallower.
const fillDepth = 32

// fill sets every exported field of v, to depth levels: numbers to 1 (the
// first name of every closed enum), text to "a", one element in each slice
// and a value behind each pointer.
func fill(v reflect.Value, depth int) {
	if depth == 0 {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.String:
		v.SetString("a")
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), depth-1)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth-1)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth-1)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fill(f, depth-1)
			}
		}
	}
}
