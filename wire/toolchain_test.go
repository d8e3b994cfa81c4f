package wire

import (
	"reflect"
	"strings"
	"testing"
)

// sampleToolchainIdentity is a rustup proxy's identity: the toolchain's
// root among the read paths, its variables in the environment.
func sampleToolchainIdentity() CommandIdentity {
	id := sampleIdentity(false)
	id.Env = append(id.Env, EnvVar{Name: "RUSTUP_HOME", Value: "/home/u/.rustup"},
		EnvVar{Name: "RUSTUP_TOOLCHAIN", Value: "stable-x86_64-unknown-linux-gnu"})
	id.Toolchain = &Toolchain{Kind: ToolchainRustup, Name: "stable-x86_64-unknown-linux-gnu", Root: "/home/u/.rustup",
		Vars: []string{"RUSTUP_HOME", "RUSTUP_TOOLCHAIN"}}
	return id
}

// An identity with a toolchain round-trips as a reply and its
// fingerprint input changes with it; one without encodes as before.
func TestToolchainRoundTrip(t *testing.T) {
	m := &ApprovalRequired{Request: sampleApproval(false)}
	m.Request.Identity = sampleToolchainIdentity()
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b, ReplyChannel)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, m)
	}
	plain := &ApprovalRequired{Request: sampleApproval(false)}
	pb, err := Encode(plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pb), "toolchain") {
		t.Fatal("an identity without a toolchain encodes a toolchain key")
	}
}

// A toolchain that names an unknown kind, a relative root, no name, a
// variable the environment lacks, or too many variables is refused.
func TestToolchainRefused(t *testing.T) {
	for name, mutate := range map[string]func(*Toolchain){
		"kind zero":     func(tc *Toolchain) { tc.Kind = 0 },
		"kind unknown":  func(tc *Toolchain) { tc.Kind = ToolchainJDK + 1 },
		"relative root": func(tc *Toolchain) { tc.Root = "home/u/.rustup" },
		"unclean root":  func(tc *Toolchain) { tc.Root = "/home/u/../u/.rustup" },
		"no name":       func(tc *Toolchain) { tc.Name = "" },
		"var not set":   func(tc *Toolchain) { tc.Vars = append(tc.Vars, "RUSTC") },
		"empty var":     func(tc *Toolchain) { tc.Vars = append(tc.Vars, "") },
		"nine vars":     func(tc *Toolchain) { tc.Vars = make([]string, 9) },
	} {
		t.Run(name, func(t *testing.T) {
			m := &ApprovalRequired{Request: sampleApproval(false)}
			m.Request.Identity = sampleToolchainIdentity()
			mutate(m.Request.Identity.Toolchain)
			if b, err := Encode(m); err == nil {
				if _, err := Decode(b, ReplyChannel); err == nil {
					t.Fatalf("encoded and decoded %+v", m.Request.Identity.Toolchain)
				}
			}
		})
	}
}
