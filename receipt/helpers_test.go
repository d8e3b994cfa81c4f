package receipt

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"warrant/wire"
)

func testKeys(t testing.TB) *Keys {
	t.Helper()
	k, err := LoadOrCreateKeys(t.TempDir() + "/keys")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func digestOf(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func testIdentity() *wire.CommandIdentity {
	return &wire.CommandIdentity{
		Executable: wire.Executable{Requested: "python3", Chain: []string{"/usr/bin/python3"},
			File: wire.FileIdentity{Path: "/usr/bin/python3.13", Dev: 2049, Ino: 1234, Mode: 0o100755,
				Size: 6_000_000, MtimeNs: 1, CtimeNs: 2, SHA256: digestOf(0xab)}},
		Argv:         []string{"-c", "print(6*7)"},
		Cwd:          wire.DirIdentity{Path: ".", Dev: 2049, Ino: 77, MntID: 30},
		Workspace:    wire.DirIdentity{Path: "/work/ws", Dev: 2049, Ino: 77, MntID: 30},
		Profile:      wire.ProfileShort,
		Env:          []wire.EnvVar{{Name: "HOME", Value: "/state/actions/a1/home"}, {Name: "PATH", Value: "/usr/bin"}},
		Policy:       wire.Policy{ReadExec: []string{"/usr"}, Devices: []string{"/dev/null"}, MinLandlockABI: 4},
		PolicyDigest: digestOf(0xcd),
	}
}

func testReady() *wire.Ready {
	return &wire.Ready{LandlockABI: 7, HandledFS: 0xffff, HandledNet: 3, Scoped: 3,
		SeccompDigest: digestOf(0x5e), Binding: wire.SealedSnapshot, ExecutedSHA256: digestOf(0xab),
		Workspace: wire.DirIdentity{Path: "/work/ws", Dev: 2049, Ino: 77, MntID: 30},
		Cwd:       wire.DirIdentity{Path: ".", Dev: 2049, Ino: 77, MntID: 30}}
}

func at(s int64) Time { return Stamp(time.Duration(s)*time.Second, time.Unix(1_700_000_000+s, 0)) }

func ptr[T any](v T) *T { return &v }

// testReceipt returns a valid receipt of outcome o.
func testReceipt(id string, o wire.Outcome) *Receipt {
	r := &Receipt{Format: Format, ID: id, Action: "act-" + id, Session: "s1", Goal: "g1",
		GoalRevision: ptr(uint64(3)), Step: "build", LeaseID: "lease-1", ApprovalID: "appr-1",
		Identity: IdentityOf(testIdentity()), Fingerprint: fmt.Sprintf("%064x", 0xf1),
		Limits: LimitsOf(wire.ProfileShort, Launched(EnforcedByCgroupV1, EnforcedByNone)), Issued: at(10), Outcome: o,
		Events: []Event{{EventRequested, at(0)}, {EventApproved, at(1)}, {EventExecuting, at(2)}}}
	switch o {
	case wire.KnownNotExecuted:
		r.Error = &Refusal{Code: wire.CodeIdentityDrift, Message: "the executable changed after approval"}
		return r
	case wire.SpawnFailed:
		r.ExecErrno = ptr(uint32(8))
		return r
	case wire.OutcomeUnknown:
		r.Pid = ptr(int64(4242))
		r.Start = ptr(at(3))
		r.Events = append(r.Events, Event{EventStarted, at(3)}, Event{EventUnknownTermination, at(9)})
		return r
	}
	r.Sandbox = SandboxOf(testReady())
	r.Pid, r.Start, r.End = ptr(int64(4242)), ptr(at(3)), ptr(at(5))
	r.GroupGone = &GroupGone{Method: GoneCgroupEmpty, At: at(5)}
	r.Events = append(r.Events, Event{EventStarted, at(3)})
	switch o {
	case wire.Exited:
		r.ExitCode = ptr(int32(0))
	case wire.Signaled:
		r.Signal = ptr(uint8(9))
	default:
		r.Signal = ptr(uint8(15))
		r.Events = append(r.Events, Event{EventTermSent, at(4)})
	}
	r.Events = append(r.Events, Event{EventTerminated, at(5)})
	return r
}

func testCaptured(t testing.TB, s StreamName, text string) *Captured {
	t.Helper()
	r, err := NewRecorder(RecorderConfig{Stream: s, Retain: 64, Budget: 1 << 20, MACKey: testMACKey, Rules: testRules(t)})
	if err != nil {
		t.Fatal(err)
	}
	return record(t, r, []byte(text), 100)
}

// testLog seals n receipts (with bodies) and a checkpoint after the last.
func testLog(t testing.TB, k *Keys, n int) ([]Entry, [][]byte) {
	t.Helper()
	c, err := NewChain(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	var entries []Entry
	for i := 0; i < n; i++ {
		r := testReceipt(fmt.Sprintf("r%03d", i), wire.Exited)
		r.Issued = at(int64(i))
		e, err := c.Seal(r, testCaptured(t, Stdout, fmt.Sprintf("out %d\n", i)), testCaptured(t, Stderr, ""))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	cp, err := c.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return entries, [][]byte{cp}
}
