package wire

import "testing"

// A Ready names exactly the filter that was applied: seccomp on Linux,
// Seatbelt on macOS; both or neither is refused on encode and decode.
func TestReadyNamesExactlyOneFilter(t *testing.T) {
	d := make([]byte, 32)
	base := func() *Ready {
		return &Ready{Binding: SealedSnapshot, ExecutedSHA256: d,
			Workspace: DirIdentity{Path: "/w"}, Cwd: DirIdentity{Path: "."}}
	}
	for name, c := range map[string]struct {
		seccomp, seatbelt []byte
		ok                bool
	}{
		"seccomp only":  {d, nil, true},
		"seatbelt only": {nil, d, true},
		"both":          {d, d, false},
		"neither":       {nil, nil, false},
	} {
		r := base()
		r.SeccompDigest, r.SeatbeltDigest = c.seccomp, c.seatbelt
		b, err := Encode(r)
		if (err == nil) != c.ok {
			t.Fatalf("%s: encode error %v, want ok=%v", name, err, c.ok)
		}
		if !c.ok {
			// Encode the invalid value by hand: the decoder must refuse it too.
			body, _ := encMode.Marshal(r)
			b, _ = encMode.Marshal(envelope{Type: TypeReady, Body: body})
		}
		m, err := Decode(b, LauncherChannel)
		if (err == nil) != c.ok || (err != nil && m != nil) {
			t.Fatalf("%s: decode %v, %v; want ok=%v", name, m, err, c.ok)
		}
	}
}
