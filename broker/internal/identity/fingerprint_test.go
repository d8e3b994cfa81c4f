package identity

import (
	"bytes"
	"encoding/hex"
	"testing"

	"warrant/wire"
)

// fixedIdentity is an identity of a broker from before egress.
func fixedIdentity() wire.CommandIdentity {
	return wire.CommandIdentity{
		Executable: wire.Executable{Requested: "npm", File: wire.FileIdentity{Path: "/usr/bin/npm", Dev: 1, Ino: 2, Mode: 0o100755,
			Size: 3, MtimeNs: 4, CtimeNs: 5, SHA256: make([]byte, 32)}},
		Argv:      []string{"ci"},
		Cwd:       wire.DirIdentity{Path: ".", Dev: 1, Ino: 6, MntID: 7},
		Workspace: wire.DirIdentity{Path: "/w", Dev: 1, Ino: 6, MntID: 7},
		Profile:   wire.ProfileShort,
		Env:       []wire.EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}},
		Policy: wire.Policy{ReadExec: []string{"/usr"}, ReadWrite: []string{}, Devices: []string{"/dev/null"}, MinLandlockABI: 4,
			Pins: []wire.PathPin{{Path: "/dev/null", Dev: 5, Ino: 4}, {Path: "/usr", Dev: 1, Ino: 8}}},
		PolicyDigest: make([]byte, 32),
		Binding:      wire.InPlace,
	}
}

// TestFingerprintEgress: an identity without egress has the fingerprint
// a broker from before egress gave it (its leases still match), and one
// with an egress list has another for every list.
func TestFingerprintEgress(t *testing.T) {
	id := fixedIdentity()
	none, err := Fingerprint(&id)
	if err != nil {
		t.Fatal(err)
	}
	// The fingerprint of fixedIdentity computed by the broker of commit
	// a1de2b2, which had no egress field.
	const before = "0532577f2af819958a0a11362268a48dd81cede181d6879463f103dd046d09bf"
	if got := hex.EncodeToString(none); got != before {
		t.Fatalf("an identity without egress: fingerprint %s, before egress %s", got, before)
	}
	id.Egress = []string{}
	if empty, err := Fingerprint(&id); err != nil || !bytes.Equal(empty, none) {
		t.Fatalf("an empty egress list is another fingerprint (%x, %v) than none (%x)", empty, err, none)
	}
	seen := map[string]bool{hex.EncodeToString(none): true}
	for _, list := range [][]string{{"registry.npmjs.org:443"}, {"127.0.0.1:4873"}, {"127.0.0.1:4873", "registry.npmjs.org:443"}} {
		id.Egress = list
		fp, err := Fingerprint(&id)
		if err != nil {
			t.Fatal(err)
		}
		if seen[hex.EncodeToString(fp)] {
			t.Errorf("egress %q: the fingerprint of another list", list)
		}
		seen[hex.EncodeToString(fp)] = true
	}
}
