package contract

import (
	"bytes"
	"encoding/json"
	"testing"

	"warrant/wire"
)

func identity() *wire.CommandIdentity {
	return &wire.CommandIdentity{
		Executable: wire.Executable{Requested: "go", File: wire.FileIdentity{Path: "/usr/bin/go", Dev: 1, Ino: 2, SHA256: make([]byte, 32)}},
		Argv:       []string{"test", "./..."},
		Cwd:        wire.DirIdentity{Path: ".", Dev: 1, Ino: 10},
		Workspace:  wire.DirIdentity{Path: "/ws", Dev: 1, Ino: 10},
		Profile:    wire.ProfileStandard,
		Env:        []wire.EnvVar{{Name: "LANG", Value: "C.UTF-8"}},
		Policy:     wire.Policy{ReadExec: []string{"/usr"}, Pins: []wire.PathPin{{Path: "/usr", Dev: 1, Ino: 3}}},
	}
}

// TestBaseFingerprint: the base leaves out the argv and the cwd, and
// nothing else.
func TestBaseFingerprint(t *testing.T) {
	base, err := BaseFingerprint(identity())
	if err != nil {
		t.Fatal(err)
	}
	g := &Grant{Base: base}
	same := identity()
	same.Argv, same.Cwd = []string{"test", "-run", "TestX", "./pkg"}, wire.DirIdentity{Path: "sub", Dev: 1, Ino: 11}
	if ok, err := g.Binds(same); !ok || err != nil {
		t.Fatalf("another argv and cwd: binds %v, %v", ok, err)
	}
	if _, err := BaseFingerprint(same); err != nil || len(same.Argv) != 4 || same.Cwd.Path != "sub" {
		t.Fatalf("BaseFingerprint changed the identity it was given: %+v, %v", same, err)
	}
	changes := map[string]func(*wire.CommandIdentity){
		"executable requested": func(id *wire.CommandIdentity) { id.Executable.Requested = "/usr/bin/go" },
		"executable chain":     func(id *wire.CommandIdentity) { id.Executable.Chain = []string{"/usr/local/bin/go"} },
		"executable digest":    func(id *wire.CommandIdentity) { id.Executable.File.SHA256 = bytes.Repeat([]byte{1}, 32) },
		"workspace":            func(id *wire.CommandIdentity) { id.Workspace.Ino = 99 },
		"profile":              func(id *wire.CommandIdentity) { id.Profile = wire.ProfileLong },
		"env":                  func(id *wire.CommandIdentity) { id.Env[0].Value = "C" },
		"policy":               func(id *wire.CommandIdentity) { id.Policy.Pins[0].Ino = 4 },
		"binding":              func(id *wire.CommandIdentity) { id.Binding = wire.SealedSnapshot },
	}
	for name, change := range changes {
		id := identity()
		change(id)
		if ok, err := g.Binds(id); ok || err != nil {
			t.Errorf("%s changed: binds %v, %v", name, ok, err)
		}
	}
	if ok, _ := (&Grant{}).Binds(identity()); ok {
		t.Error("a grant without a base binds")
	}
}

// TestParseEncodes: a parse goes into a receipt as CBOR (wire's
// canonical encoding) or JSON and comes back the same.
func TestParseEncodes(t *testing.T) {
	c, err := Builtin("go-test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Match(args("test -run=TestX -count 2 ./pkg/..."), libraryTree(t), gitProtected)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(p *Parse) {
		for i := range p.Args {
			p.Args[i].val = nil
		}
	}
	b, err := wire.Canonical(p)
	if err != nil {
		t.Fatal(err)
	}
	var fromCBOR Parse
	if err := wire.DecodeCanonical(b, &fromCBOR); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON Parse
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatal(err)
	}
	strip(p)
	for _, got := range []*Parse{&fromCBOR, &fromJSON} {
		if len(got.Args) != 5 || got.Digest != c.Digest() || got.Args[4].Path != "pkg" || got.Args[1].Value != "TestX" {
			t.Fatalf("decoded %+v", got)
		}
		for i := range got.Args {
			if got.Args[i] != p.Args[i] {
				t.Fatalf("arg %d: %+v, want %+v", i, got.Args[i], p.Args[i])
			}
		}
	}
}
