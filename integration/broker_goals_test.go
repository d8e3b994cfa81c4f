//go:build linux

package integration

import (
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // to forge and edit log rows as an attacker with the store would

	"warrant/receipt"
	"warrant/wire"
)

// The goal of the issue: "build produces out/app whose --version prints
// 1.2". build.sh writes nothing (none), an out/app of the wrong version
// (wrong), or the right one with out/version.json (good), and always
// prints VERIFIED_DONE, which is not evidence. out/app leaves a marker
// on the host each time it runs, so a blocked step can be seen not to
// have run.
const buildScript = `#!/bin/sh
mkdir -p out
case "$1" in
wrong) printf '#!/bin/sh\necho ran >> out/ran\necho app 1.1\nexit 1\n' > out/app; chmod 755 out/app ;;
good) printf '#!/bin/sh\necho ran >> out/ran\necho app 1.2\n' > out/app; chmod 755 out/app
      printf '{"name":"app","version":"1.2"}' > out/version.json ;;
esac
echo VERIFIED_DONE
`

// goodApp is what build.sh good writes as out/app.
const goodApp = "#!/bin/sh\necho ran >> out/ran\necho app 1.2\n"

func goalDocument(ws string) string {
	sum := sha256.Sum256([]byte(goodApp))
	doc := map[string]any{
		"title":     "build produces out/app whose --version prints 1.2",
		"workspace": ws,
		"steps": []any{
			map[string]any{"id": "build", "outputs": []string{"out/app"}, "criteria": []any{
				map[string]any{"kind": "artefact", "path": "out/app", "sha256": hex.EncodeToString(sum[:])},
			}},
			map[string]any{"id": "check", "depends_on": []string{"build"}, "criteria": []any{
				map[string]any{"kind": "receipt", "command": map[string]any{"executable": "out/app", "argv": []string{"--version"}}},
				map[string]any{"kind": "file", "path": "out/version.json", "json_pointer": "/version", "equals": "1.2"},
			}},
		},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// goalView is the part of `broker goals … --json` the tests read
// (docs/goals.md).
type goalView struct {
	Goal     string           `json:"goal"`
	Revision uint64           `json:"revision"`
	Status   string           `json:"status"`
	Verdict  *receipt.Verdict `json:"verdict"`
}

// goalsCLI runs `broker goals ARGS --json` and decodes the view.
func goalsCLI(t *testing.T, d *brokerd, args ...string) (*goalView, int) {
	t.Helper()
	out, code := d.CLI(append([]string{"goals"}, append(args, "--json")...)...)
	var v goalView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("broker goals %v: exit %d, not a view: %v\n%s", args, code, err, out)
	}
	return &v, code
}

// stepRun runs exe under goal g and step with a one-use lease.
func (a *agent) stepRun(g, step, exe string, args ...string) *wire.Result {
	a.t.Helper()
	req := a.request(wire.ProfileShort, exe, args...)
	req.Goal, req.Step = g, step
	_, res := a.Run(req)
	return res
}

func criterion(t *testing.T, v *goalView, step string, i int) receipt.CriterionVerdict {
	t.Helper()
	for _, s := range v.Verdict.Steps {
		if s.ID == step {
			return s.Criteria[i]
		}
	}
	t.Fatalf("verdict has no step %s", step)
	return receipt.CriterionVerdict{}
}

func createGoal(t *testing.T, d *brokerd, doc string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "goal.json")
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	v, code := goalsCLI(t, d, "create", f)
	if code != 0 || v.Status != "UNVERIFIED" || v.Revision != 1 {
		t.Fatalf("goals create: exit %d, %+v", code, v)
	}
	return v.Goal
}

// TestGoalEvidence walks the goal from exit 0 with no file to
// VERIFIED_DONE and back to not done after a revision, checking every
// verdict's findings and what a blocked step left on the host.
func TestGoalEvidence(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	if err := os.WriteFile(filepath.Join(a.WS, "build.sh"), []byte(buildScript), 0o755); err != nil {
		t.Fatal(err)
	}
	g := createGoal(t, d, goalDocument(a.WS))
	ran := filepath.Join(a.WS, "out", "ran")

	// Exit 0, VERIFIED_DONE on stdout, no file: not done.
	res := a.stepRun(g, "build", "./build.sh", "none")
	if res.Outcome != wire.Exited || *res.ExitCode != 0 || !strings.Contains(res.Stdout.Text, "VERIFIED_DONE") {
		t.Fatalf("build none: %+v", res)
	}
	rc := d.Receipt(res.ReceiptID)
	if rc.Step != "build" || len(rc.Artefacts) != 1 || rc.Artefacts[0].State != receipt.FileMissing {
		t.Fatalf("receipt of build none: step %q artefacts %+v; want out/app listed missing", rc.Step, rc.Artefacts)
	}
	if out, _ := d.CLI("receipts", "show", res.ReceiptID); !strings.Contains(out, "out/app: missing") || !strings.Contains(out, "step build") {
		t.Fatalf("receipts show does not list the missing artefact:\n%s", out)
	}
	v, code := goalsCLI(t, d, "verify", g)
	if code == 0 || v.Status != "NOT_DONE" || v.Verdict.Done || criterion(t, v, "build", 0).Met {
		t.Fatalf("after exit 0 with no file: exit %d, %+v", code, v.Verdict)
	}
	t.Logf("no file: %s", criterion(t, v, "build", 0).Why)

	// The wrong out/app: not done, and check is blocked without running.
	a.stepRun(g, "build", "./build.sh", "wrong")
	if _, err := os.Stat(filepath.Join(a.WS, "out", "app")); err != nil {
		t.Fatalf("build wrong wrote no out/app: %v", err)
	}
	if v, _ = goalsCLI(t, d, "verify", g); v.Verdict.Done || criterion(t, v, "build", 0).Met ||
		!strings.Contains(criterion(t, v, "build", 0).Why, "want") {
		t.Fatalf("after the wrong digest: %+v", v.Verdict)
	}
	out, code := d.CLI("run", "--goal", g, "--step", "check", "--json", "--approve", "--cwd", ".", "--workspace", a.WS, "--", "out/app", "--version")
	if code != 125 || !strings.Contains(out, "STEP_BLOCKED") || !strings.Contains(out, "build") {
		t.Fatalf("check before build is verified: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Fatalf("a blocked step ran out/app: %v", err)
	}
	if _, err := a.cl.Submit(a.WS, wire.ActionRequest{Executable: "out/app", Argv: []string{"--version"}, Cwd: ".",
		Profile: wire.ProfileShort, Goal: g, Step: "nosuch"}); !isCode(err, wire.CodeArgumentsInvalid) {
		t.Fatalf("unknown step: %v", err)
	}

	// The right artefact: build is done, check still is not.
	a.stepRun(g, "build", "./build.sh", "good")
	v, _ = goalsCLI(t, d, "verify", g)
	if v.Verdict.Done || !v.Verdict.Steps[0].Done || v.Verdict.Steps[1].Done {
		t.Fatalf("after the right artefact alone: %+v", v.Verdict)
	}
	// ... plus a matching receipt: VERIFIED_DONE.
	res = a.stepRun(g, "check", "out/app", "--version")
	if res.Outcome != wire.Exited || *res.ExitCode != 0 || !strings.Contains(res.Stdout.Text, "app 1.2") {
		t.Fatalf("out/app --version: %+v", res)
	}
	v, code = goalsCLI(t, d, "verify", g)
	if code != 0 || v.Status != "VERIFIED_DONE" || !v.Verdict.Done {
		t.Fatalf("with the artefact and the receipt: exit %d %+v", code, v.Verdict)
	}
	named := map[string]bool{}
	for _, u := range v.Verdict.Receipts {
		named[u.ID] = true
	}
	if !named[res.ReceiptID] || len(v.Verdict.ReadBacks) < 2 {
		t.Fatalf("the verdict does not name receipt %s and its read-backs: %+v", res.ReceiptID, v.Verdict)
	}
	rep := d.Verify()
	if rep.Verdicts != 4 {
		t.Fatalf("receipts verify counts %d verdicts, want 4", rep.Verdicts)
	}
	out, _ = d.CLI("receipts", "list")
	if !strings.Contains(out, "goal verdict: goal "+g+" revision 1 VERIFIED_DONE") {
		t.Fatalf("receipts list does not show the verdict:\n%s", out)
	}

	// A revision: not done until verified again, and its receipts are new.
	if v, code = goalsCLI(t, d, "revise", g); code != 0 || v.Revision != 2 || v.Status != "UNVERIFIED" {
		t.Fatalf("revise: exit %d %+v", code, v)
	}
	if v, _ = goalsCLI(t, d, "verify", g); v.Verdict.Done || v.Verdict.Revision != 2 {
		t.Fatalf("after the revision, the old receipts counted: %+v", v.Verdict)
	}
	if _, err := a.cl.Submit(a.WS, wire.ActionRequest{Executable: "out/app", Argv: []string{"--version"}, Cwd: ".",
		Profile: wire.ProfileShort, Goal: g, Step: "check", Session: "s-" + token(t)}); !isCode(err, wire.CodeStepBlocked) {
		t.Fatalf("check under revision 2 before build is verified again: %v", err)
	}
	a.stepRun(g, "build", "./build.sh", "good")
	goalsCLI(t, d, "verify", g)
	a.stepRun(g, "check", "out/app", "--version")
	if v, code = goalsCLI(t, d, "verify", g); code != 0 || !v.Verdict.Done || v.Verdict.Revision != 2 {
		t.Fatalf("re-verified under revision 2: exit %d %+v", code, v.Verdict)
	}
}

func isCode(err error, c wire.Code) bool {
	we, ok := err.(*wire.Error)
	return ok && we.Code == c
}

// TestGoalDAGRefused: duplicate ids, a missing dependency and a 3-cycle
// are refused with ARGUMENTS_INVALID naming them, and no goal is made.
func TestGoalDAGRefused(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	crit := `"criteria":[{"kind":"operator","prompt":"ok?"}]`
	cases := map[string]struct{ steps, want string }{
		"duplicate": {`{"id":"a",` + crit + `},{"id":"a",` + crit + `}`, `step id "a" is used twice`},
		"missing":   {`{"id":"a","depends_on":["ghost"],` + crit + `}`, `step a depends on "ghost", which is not a step`},
		"cycle": {`{"id":"a","depends_on":["c"],` + crit + `},{"id":"b","depends_on":["a"],` + crit + `},{"id":"c","depends_on":["b"],` + crit + `}`,
			"cycle: a → c → b → a"},
	}
	for name, c := range cases {
		doc := `{"title":"t","workspace":"` + a.WS + `","steps":[` + c.steps + `]}`
		_, err := a.cl.CreateGoal("", doc)
		if !isCode(err, wire.CodeArgumentsInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ARGUMENTS_INVALID naming %q", name, err, c.want)
		}
	}
	l, err := a.cl.ListGoals()
	if err != nil || len(l.Goals) != 1 || l.Goals[0].Goal != "default" {
		t.Fatalf("a refused goal was stored: %+v %v", l, err)
	}
	// A revision is validated the same way and leaves the goal as it was.
	g := createGoal(t, d, `{"title":"t","workspace":"`+a.WS+`","steps":[{"id":"a",`+crit+`}]}`)
	_, err = a.cl.ReviseGoal(g, `{"title":"t","workspace":"`+a.WS+`","steps":[{"id":"a","depends_on":["a"],`+crit+`}]}`)
	if !isCode(err, wire.CodeArgumentsInvalid) || !strings.Contains(err.Error(), "cycle: a → a") {
		t.Fatalf("a revision with a cycle: %v", err)
	}
	if v, _ := goalsCLI(t, d, "show", g); v.Revision != 1 {
		t.Fatalf("a refused revision was stored: revision %d", v.Revision)
	}
}

// TestGoalForgedEvidence: a receipt of another goal, a receipt signed by
// another state directory's key, and an edited receipt are not evidence;
// each time the same criteria are met by a genuine receipt, so the test
// can fail.
func TestGoalForgedEvidence(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	if err := os.WriteFile(filepath.Join(a.WS, "build.sh"), []byte(buildScript), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := `{"title":"app --version","workspace":"` + a.WS + `","steps":[{"id":"check","criteria":[` +
		`{"kind":"receipt","command":{"executable":"out/app","argv":["--version"]}}]}]}`
	g1, g2 := createGoal(t, d, doc), createGoal(t, d, doc)
	a.stepRun(g1, "check", "./build.sh", "good")

	// Another goal's receipt: done for g1, not for g2.
	a.stepRun(g1, "check", "out/app", "--version")
	if v, _ := goalsCLI(t, d, "verify", g1); !v.Verdict.Done {
		t.Fatalf("the genuine receipt does not verify g1: %+v", v.Verdict)
	}
	if v, _ := goalsCLI(t, d, "verify", g2); v.Verdict.Done {
		t.Fatalf("g1's receipt counted for g2: %+v", v.Verdict)
	}

	// A receipt of g2 from another state directory (another key), put
	// into this log's store as an attacker with the store would.
	other := startBroker(t, "")
	copyGoal(t, d.State, other.State, g2)
	b := other.newAgent(t)
	b.WS = a.WS
	if res := b.stepRun(g2, "check", "out/app", "--version"); res.Outcome != wire.Exited || *res.ExitCode != 0 {
		t.Fatalf("the other broker's run: %+v", res)
	}
	if v, _ := goalsCLI(t, other, "verify", g2); !v.Verdict.Done {
		t.Fatalf("the foreign receipt does not even satisfy its own broker: %+v", v.Verdict)
	}
	foreign := lastReceiptEnvelope(t, other.State)
	db := openJournal(t, d.State)
	idx, genuine := lastReceiptRow(t, db)
	var env []byte
	_, err := db.Exec(`UPDATE receipt_log SET envelope = ? WHERE idx = ?`, foreign, idx)
	must(t, err)
	v, _ := goalsCLI(t, d, "verify", g2)
	if v.Verdict.Done || v.Verdict.Problem == "" {
		t.Fatalf("a receipt under another key counted: %+v", v.Verdict)
	}
	t.Logf("foreign key: %s", v.Verdict.Problem)
	out, code := d.CLI("receipts", "verify")
	if code == 0 || !strings.Contains(out, "foreign_key") {
		t.Fatalf("receipts verify passed a foreign receipt: exit %d\n%s", code, out)
	}
	_, err = db.Exec(`UPDATE receipt_log SET envelope = ? WHERE idx = ?`, genuine, idx)
	must(t, err)
	if v, _ := goalsCLI(t, d, "verify", g1); !v.Verdict.Done {
		t.Fatalf("with the genuine receipt back g1 is not done: %+v", v.Verdict)
	}

	// An edited receipt: g2's own failing run, its exit code edited to 0.
	os.WriteFile(filepath.Join(a.WS, "build.sh"), []byte(buildScript), 0o755)
	a.stepRun(g2, "check", "./build.sh", "wrong")
	if res := a.stepRun(g2, "check", "out/app", "--version"); *res.ExitCode != 1 {
		t.Fatalf("the wrong app exited %d", *res.ExitCode)
	}
	idx, env = lastReceiptRow(t, db)
	edited := editPayload(t, env, `"exitCode":1`, `"exitCode":0`)
	_, err = db.Exec(`UPDATE receipt_log SET envelope = ? WHERE idx = ?`, edited, idx)
	must(t, err)
	if v, _ = goalsCLI(t, d, "verify", g2); v.Verdict.Done || v.Verdict.Problem == "" {
		t.Fatalf("an edited receipt counted: %+v", v.Verdict)
	}
	t.Logf("edited: %s", v.Verdict.Problem)
	if out, code = d.CLI("receipts", "verify"); code == 0 || !strings.Contains(out, "bad_signature") {
		t.Fatalf("receipts verify passed an edited receipt: exit %d\n%s", code, out)
	}
}

func openJournal(t *testing.T, state string) *sql.DB {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(state, "journal.db")+"?"+q.Encode())
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyGoal gives the other state directory the goal g with its document.
func copyGoal(t *testing.T, from, to, g string) {
	t.Helper()
	src, dst := openJournal(t, from), openJournal(t, to)
	var title, doc, digest string
	must(t, src.QueryRow(`SELECT g.title, r.document, r.digest FROM goals g JOIN goal_revisions r ON r.goal = g.id WHERE g.id = ?`, g).Scan(&title, &doc, &digest))
	_, err := dst.Exec(`INSERT INTO goals (id, title, revision, state, created_unix) VALUES (?, ?, 1, 'active', 0)`, g, title)
	must(t, err)
	_, err = dst.Exec(`INSERT INTO goal_revisions (goal, revision, document, digest, created_unix) VALUES (?, 1, ?, ?, 0)`, g, doc, digest)
	must(t, err)
}

func lastReceiptRow(t *testing.T, db *sql.DB) (int64, []byte) {
	t.Helper()
	var idx int64
	var env []byte
	must(t, db.QueryRow(`SELECT idx, envelope FROM receipt_log WHERE receipt_id IS NOT NULL ORDER BY idx DESC LIMIT 1`).Scan(&idx, &env))
	return idx, env
}

func lastReceiptEnvelope(t *testing.T, state string) []byte {
	_, env := lastReceiptRow(t, openJournal(t, state))
	return env
}

// editPayload replaces old with new in an envelope's payload, keeping
// its signature.
func editPayload(t *testing.T, env []byte, old, new string) []byte {
	t.Helper()
	var e receipt.Envelope
	must(t, json.Unmarshal(env, &e))
	p, err := base64.StdEncoding.DecodeString(e.Payload)
	must(t, err)
	if !strings.Contains(string(p), old) {
		t.Fatalf("the payload has no %s", old)
	}
	e.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(p), old, new, 1)))
	out, err := json.Marshal(e)
	must(t, err)
	return out
}

// TestGoalOperatorStatement: an operator criterion is met only by the
// operator's statement through the operator channel, recorded in the
// log as a statement and not as a receipt; pause and cancel are the
// operator's and a cancelled goal stays cancelled.
func TestGoalOperatorStatement(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	g := createGoal(t, d, `{"title":"the page renders","workspace":"`+a.WS+`","steps":[{"id":"review","criteria":[`+
		`{"kind":"operator","prompt":"open the page and say whether it renders"}]}]}`)
	if v, code := goalsCLI(t, d, "verify", g); code == 0 || v.Verdict.Done {
		t.Fatalf("done before any statement: %+v", v.Verdict)
	}
	if _, code := d.CLI("goals", "attest", g, "nosuch", "fine"); code == 0 {
		t.Fatal("a statement about a step the goal does not have was recorded")
	}
	if v, code := goalsCLI(t, d, "attest", g, "review", "it renders in Firefox"); code != 0 || v.Status != "NOT_DONE" { // the latest verdict stands until the next one
		t.Fatalf("attest: exit %d %+v", code, v)
	}
	v, code := goalsCLI(t, d, "verify", g)
	if code != 0 || !v.Verdict.Done || len(v.Verdict.Statements) != 1 || len(v.Verdict.Receipts) != 0 {
		t.Fatalf("after the statement: exit %d %+v", code, v.Verdict)
	}
	rep := d.Verify()
	if rep.Statements != 1 || rep.Receipts != 0 || rep.Verdicts != 2 {
		t.Fatalf("receipts verify: %d statements, %d receipts, %d verdicts; want 1, 0, 2", rep.Statements, rep.Receipts, rep.Verdicts)
	}
	if out, _ := d.CLI("receipts", "list"); !strings.Contains(out, "operator statement: goal "+g+" revision 1 step review") {
		t.Fatalf("receipts list:\n%s", out)
	}
	for _, step := range []struct{ verb, state string }{{"pause", "paused"}, {"resume", "active"}, {"cancel", "cancelled"}} {
		out, code := d.CLI("goals", step.verb, g, "--json")
		var got struct {
			State string `json:"state"`
		}
		if json.Unmarshal([]byte(out), &got) != nil || code != 0 || got.State != step.state {
			t.Fatalf("goals %s: exit %d\n%s", step.verb, code, out)
		}
	}
	if _, code := d.CLI("goals", "resume", g); code == 0 {
		t.Fatal("a cancelled goal was resumed")
	}
	if out, _ := d.CLI("goals", "list", "--json"); !strings.Contains(out, `"state": "cancelled"`) {
		t.Fatalf("goals list:\n%s", out)
	}
}
