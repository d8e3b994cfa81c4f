package goals

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// The oracle's unit tests seal synthetic receipts into a real chain under
// a real key and judge them through Verifier.Evidence, as the broker does.

const ws = "/work/ws"

func ptr[T any](v T) *T { return &v }

func at(s int64) receipt.Time {
	return receipt.Stamp(time.Duration(s)*time.Second, time.Unix(1_700_000_000+s, 0))
}

func hexOf(b byte) string { return strings.Repeat(fmt.Sprintf("%02x", b), 32) }

// exited is a valid receipt of goal g, revision rev, step st running
// exe argv in the workspace, exited with code.
func exited(id, g string, rev uint64, st, exe string, argv []string, code int32) *receipt.Receipt {
	sum := hexOf(0xab)
	r := &receipt.Receipt{Format: receipt.Format, ID: id, Action: "act-" + id, Goal: g, GoalRevision: ptr(rev), Step: st,
		Identity: receipt.Identity{Requested: exe, Executable: receipt.File{Path: "/usr/bin/" + exe, SHA256: sum},
			Argv: argv, Cwd: receipt.Dir{Path: "."}, Workspace: receipt.Dir{Path: ws}, Profile: wire.ProfileShort,
			EnvNames: []string{}, Policy: receipt.Policy{ReadExec: []string{}, ReadWrite: []string{}, Devices: []string{}},
			PolicyDigest: hexOf(0xcd)},
		Fingerprint: hexOf(0xf1), Limits: receipt.LimitsOf(wire.ProfileShort, receipt.Uniform(receipt.EnforcedByRlimit)),
		Sandbox: receipt.SandboxOf(&wire.Ready{LandlockABI: 7, SeccompDigest: make([]byte, 32), Binding: wire.SealedSnapshot,
			ExecutedSHA256: make([]byte, 32)}),
		Issued: at(10), Pid: ptr(int64(42)), Start: ptr(at(3)), End: ptr(at(5)), ExitCode: ptr(code),
		GroupGone: &receipt.GroupGone{Method: receipt.GoneCgroupEmpty, At: at(5)}, Outcome: wire.Exited,
		Events: []receipt.Event{{Type: receipt.EventRequested, At: at(0)}, {Type: receipt.EventExecuting, At: at(2)},
			{Type: receipt.EventStarted, At: at(3)}, {Type: receipt.EventTerminated, At: at(5)}}}
	return r
}

type fixture struct {
	t       testing.TB
	keys    *receipt.Keys
	chain   *receipt.Chain
	entries []receipt.Entry
}

func newFixture(t testing.TB) *fixture {
	k, err := receipt.LoadOrCreateKeys(t.TempDir() + "/keys")
	must(t, err)
	c, err := receipt.NewChain(k, nil)
	must(t, err)
	return &fixture{t: t, keys: k, chain: c}
}

func (f *fixture) seal(r *receipt.Receipt) {
	e, err := f.chain.Seal(r)
	must(f.t, err)
	f.entries = append(f.entries, e)
}

func (f *fixture) judge(spec *Spec, rev uint64, files map[string]string) receipt.Verdict {
	cp, err := f.chain.Checkpoint()
	must(f.t, err)
	rep, ev := receipt.NewVerifier(f.keys.Public()).Evidence(f.entries, [][]byte{cp}, receipt.Expect{Checkpointed: true})
	in := Input{Goal: "g1", Revision: rev, Spec: spec, Digest: Digest(spec.Encode()), Evidence: ev, Read: mapReader(files)}
	in.Rejected = len(rep.Problems)
	return Evaluate(in)
}

func mapReader(files map[string]string) Reader {
	return func(rel string, _ bool) (receipt.ReadBack, []byte) {
		c, ok := files[rel]
		if !ok {
			return receipt.ReadBack{Path: rel, State: receipt.FileMissing}, nil
		}
		sum := sha256.Sum256([]byte(c))
		return receipt.ReadBack{Path: rel, State: receipt.FilePresent, Size: ptr(uint64(len(c))), SHA256: hex.EncodeToString(sum[:])}, []byte(c)
	}
}

func testSpec(t testing.TB) *Spec {
	s, err := Decode(`{"title":"t","workspace":"`+ws+`","steps":[{"id":"test","criteria":[`+
		`{"kind":"receipt","command":{"executable":"make","argv":["test"]}},`+
		`{"kind":"file","path":"report.json","json_pointer":"/failed","equals":0},`+
		`{"kind":"file","path":"report.json","contains":"passed"}]}]}`, "")
	must(t, err)
	return s
}

// TestOracleClosedFields: each receipt below fails exactly one closed
// field the oracle checks; only the genuine one makes the goal done.
func TestOracleClosedFields(t *testing.T) {
	report := map[string]string{"report.json": `{"passed":12,"failed":0}`}
	bad := map[string]func(*receipt.Receipt){
		"exit 1":            func(r *receipt.Receipt) { r.ExitCode = ptr(int32(1)) },
		"another goal":      func(r *receipt.Receipt) { r.Goal = "g2" },
		"another revision":  func(r *receipt.Receipt) { r.GoalRevision = ptr(uint64(1)) },
		"another step":      func(r *receipt.Receipt) { r.Step = "build" },
		"another argv":      func(r *receipt.Receipt) { r.Identity.Argv = []string{"test", "-k"} },
		"another workspace": func(r *receipt.Receipt) { r.Identity.Workspace.Path = "/elsewhere" },
		"protected changes": func(r *receipt.Receipt) {
			r.Protected = &receipt.Protected{By: receipt.ProtectedByDetect, Checked: 3,
				Changes: []wire.ProtectedChange{{Path: ".git/hooks/pre-commit", Before: "absent", After: "sha256:00 mode:0755"}}}
		},
	}
	for name, mutate := range bad {
		f := newFixture(t)
		r := exited("r1", "g1", 2, "test", "make", []string{"test"}, 0)
		mutate(r)
		f.seal(r)
		if v := f.judge(testSpec(t), 2, report); v.Done {
			t.Errorf("%s: VERIFIED_DONE", name)
		}
	}
	f := newFixture(t)
	f.seal(exited("r1", "g1", 2, "test", "make", []string{"test"}, 0))
	if v := f.judge(testSpec(t), 2, report); !v.Done || len(v.Receipts) != 1 || len(v.ReadBacks) != 1 {
		t.Fatalf("the genuine receipt and report: %+v", v)
	}
	if v := f.judge(testSpec(t), 2, map[string]string{"report.json": `{"passed":12,"failed":1}`}); v.Done {
		t.Error("failed 1 satisfied json_pointer /failed == 0")
	}
	if v := f.judge(testSpec(t), 2, nil); v.Done {
		t.Error("a missing report satisfied the file criteria")
	}
	// A later failing run of the same command is the latest word.
	f.seal(exited("r2", "g1", 2, "test", "make", []string{"test"}, 2))
	if v := f.judge(testSpec(t), 2, report); v.Done {
		t.Error("an earlier success outweighed the latest failure")
	}
}

// TestOracleUnverifiedReceipt: a receipt that fails verification is not
// evidence, even when its fields would satisfy the criteria.
func TestOracleUnverifiedReceipt(t *testing.T) {
	f := newFixture(t)
	f.seal(exited("r1", "g1", 2, "test", "make", []string{"test"}, 0))
	other := newFixture(t)
	other.seal(exited("r1", "g1", 2, "test", "make", []string{"test"}, 0))
	cp, err := f.chain.Checkpoint()
	must(t, err)
	_, ev := receipt.NewVerifier(f.keys.Public()).Evidence(other.entries, [][]byte{cp}, receipt.Expect{Checkpointed: true})
	if len(ev) != 0 {
		t.Fatalf("a receipt under another key is evidence: %+v", ev)
	}
}

// TestViewBound: the largest views a document within wire.MaxGoalJSON
// can make — as many steps and criteria as the caps allow, each
// depending on every step before it, every path distinct and as long as
// the document's size leaves room for, every criterion unmet with its
// longest finding, half of them naming a receipt the verdict uses — fit
// wire.MaxGoalView.
func TestViewBound(t *testing.T) {
	for _, pathLen := range []int{8, 24, 40} {
		var steps []Step
		f := newFixture(t)
		for s := range MaxSteps {
			st := Step{ID: fmt.Sprintf("%0*d", maxID, s)}
			for d := max(0, s-MaxDeps); d < s; d++ {
				st.DependsOn = append(st.DependsOn, steps[d].ID)
			}
			for c := range MaxCriteria {
				p := fmt.Sprintf("%0*d", pathLen, s*MaxCriteria+c)
				if c%2 == 0 {
					st.Criteria = append(st.Criteria, Criterion{Kind: KindFile, Path: p})
					continue
				}
				st.Criteria = append(st.Criteria, Criterion{Kind: KindReceipt, Command: &Command{Executable: p, Argv: []string{}}})
				f.seal(exited(fmt.Sprintf("r-%06d", s*MaxCriteria+c), "g1", 1, st.ID, p, []string{}, 1))
			}
			steps = append(steps, st)
			if len((&Spec{Title: "t", Workspace: ws, Steps: steps}).Encode()) > wire.MaxGoalJSON {
				steps = steps[:len(steps)-1]
				break
			}
		}
		spec := &Spec{Title: "t", Workspace: ws, Steps: steps}
		spec.Title = strings.Repeat("t", max(1, min(maxText, wire.MaxGoalJSON-len(spec.Encode()))))
		must(t, spec.Validate())
		cp, err := f.chain.Checkpoint()
		must(t, err)
		_, ev := receipt.NewVerifier(f.keys.Public()).Evidence(f.entries, [][]byte{cp}, receipt.Expect{Checkpointed: true})
		long := strings.Repeat("x", 4096)
		v := Evaluate(Input{Goal: strings.Repeat("g", 256), Revision: 1, Spec: spec, Digest: Digest(spec.Encode()), Evidence: ev,
			Read: func(rel string, _ bool) (receipt.ReadBack, []byte) {
				return unchecked(receipt.ReadBack{Path: rel}, long), nil
			}})
		idx := int64(1 << 40)
		view := (&View{Goal: v.Goal, Title: spec.Title, Revision: 1, State: "active", Status: StatusOf(spec, &v), Document: spec,
			GoalDigest: v.GoalDigest, Verdict: &v, VerdictIndex: &idx}).JSON()
		t.Logf("paths of %d bytes: %d steps, document %d bytes, view %d bytes (cap %d)", pathLen, len(steps), len(spec.Encode()), len(view), wire.MaxGoalView)
		if len(view) > wire.MaxGoalView {
			t.Errorf("a view of %d bytes is over wire.MaxGoalView", len(view))
		}
		// And the verdict can be signed: it is within the predicate's bounds.
		if _, _, err := f.chain.AppendVerdict(v); err != nil {
			t.Errorf("the largest verdict cannot be recorded: %v", err)
		}
	}
}
