//go:build linux

package integration

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// refusedRequest requires a refusal with code and that the marker the
// target would have written is absent.
func refusedRequest(t *testing.T, a *action, l launch, code wire.Code) {
	t.Helper()
	a.Launch(l).Refused(t, code)
	noMarker(t, a.Workspace)
}

func TestLauncherRefusesASecondRequest(t *testing.T) {
	a := newAction(t)
	refusedRequest(t, a, launch{Req: a.Helper("write", "marker", "x"), Second: true}, wire.CodeArgumentsInvalid)
}

func TestLauncherMalformedFrames(t *testing.T) {
	a := newAction(t)
	req := a.Helper("write", "marker", "x", "qqqqqqqq")
	valid, err := wire.EncodeFrame(req)
	if err != nil {
		t.Fatal(err)
	}
	body := valid[4:]
	proceed, err := wire.EncodeFrame(&wire.Proceed{})
	if err != nil {
		t.Fatal(err)
	}
	withLANG := a.Helper("write", "marker", "x")
	withLANG.Env = append([]wire.EnvVar{{Name: "LANG", Value: "qqqqqqqq"}}, withLANG.Env...)
	frames := map[string][]byte{
		"junk":                   []byte("hello, launcher"),
		"proceed first":          proceed,
		"another spawn protocol": splice(t, req, "\x68protocol\x05", "\x68protocol\x04"), // an older broker sends no Prepare
		"empty":                  {},
		"short header":           {0, 0},
		"length mismatch":        append(append([]byte{}, valid...), 0),
		"trailing bytes":         reframe(append(append([]byte{}, body...), 0)),
		"nesting bomb":           reframe(append(bytes.Repeat([]byte{0x81}, 100000), 0)),
		"size bomb":              reframe([]byte{0x9b, 0, 0, 0, 1, 0, 0, 0, 0}),
		"oversized":              reframe(make([]byte, wire.MaxLauncherFrame+64)),
		"duplicate key":          splice(t, req, "\x64home", "\x64argv"),
		"indefinite length":      splice(t, req, "\x64home", "\x7f\x64home\xff"),
		"NUL in argv":            splice(t, req, "qqqqqqqq", "qqqq\x00qqq"),
		"invalid UTF-8 in argv":  splice(t, req, "qqqqqqqq", "qq\xff\xfeqqqq"),
		"NUL in env":             splice(t, withLANG, "qqqqqqqq", "qq\x00qqqqq"),
		"empty argv":             splice(t, a.Helper(), "\x64argv\x81"+cborText(bins.helper), "\x64argv\x80"),
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			a.t = t
			r := a.Launch(launch{Req: req, Frame: frame})
			ref := r.Refused(t, wire.CodeArgumentsInvalid)
			t.Logf("%s: %s", name, ref.Detail)
		})
	}
	noMarker(t, a.Workspace)
}

func TestLauncherHostileDescriptors(t *testing.T) {
	a := newAction(t)
	req := a.Helper("write", "marker", "x")
	file := func() int {
		fd, err := unix.Open(bins.helper, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	pipeEnd := func(read bool) int {
		var p [2]int
		unix.Pipe2(p[:], unix.O_CLOEXEC)
		if read {
			unix.Close(p[1])
			return p[0]
		}
		unix.Close(p[0])
		return p[1]
	}
	other := func() int {
		fd, err := unix.Open(a.Outside, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	socket := func() int {
		sv, _ := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		unix.Close(sv[1])
		return sv[0]
	}
	cases := map[string]struct {
		fds  func(def []int) []int
		code wire.Code
	}{
		"smuggled extra fd":  {func(d []int) []int { return append(d, pipeEnd(false)) }, wire.CodeArgumentsInvalid},
		"missing fd":         {func(d []int) []int { return d[:2] }, wire.CodeArgumentsInvalid},
		"no fds":             {func(d []int) []int { return nil }, wire.CodeArgumentsInvalid},
		"file as workspace":  {func(d []int) []int { return []int{file(), d[1], d[2]} }, wire.CodeArgumentsInvalid},
		"read end as stdout": {func(d []int) []int { return []int{d[0], pipeEnd(true), d[2]} }, wire.CodeArgumentsInvalid},
		"file as stderr":     {func(d []int) []int { return []int{d[0], d[1], file()} }, wire.CodeArgumentsInvalid},
		"socket as stdout":   {func(d []int) []int { return []int{d[0], socket(), d[2]} }, wire.CodeArgumentsInvalid},
		"other workspace fd": {func(d []int) []int { return []int{other(), d[1], d[2]} }, wire.CodeIdentityDrift},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a.t = t
			refusedRequest(t, a, launch{Req: req, FDs: c.fds}, c.code)
		})
	}
}

// The request socket's peer must be the launcher's parent.
func TestLauncherRefusesAForeignPeer(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skipf("skip: no /bin/sh to interpose a parent: %v", err)
	}
	a := newAction(t)
	refusedRequest(t, a, launch{Req: a.Helper("write", "marker", "x"), Wrap: []string{"/bin/sh", "-c", `"$0"; exit $?`}},
		wire.CodeArgumentsInvalid)
}

// cborText is the CBOR encoding of a text string shorter than 64 KiB.
func cborText(s string) string {
	switch {
	case len(s) < 24:
		return string(rune(0x60+len(s))) + s
	case len(s) < 256:
		return "\x78" + string([]byte{byte(len(s))}) + s
	}
	return "\x79" + string([]byte{byte(len(s) >> 8), byte(len(s))}) + s
}
