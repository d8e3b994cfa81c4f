//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The acceptance journey of issue 33: a scripted agent drives `broker
// mcp` (the Go SDK's client over stdio) through a 20-command edit-test
// loop, editing files between the commands as an agent does, while a
// scripted human at a second terminal decides each approval request with
// the operator CLI. Every action keeps its own receipt with its concrete
// argv; the decisions the human made are counted.

// journeyStep is one command of a loop: the files the agent writes first
// (its editor, on the host), then the command, run through MCP.
type journeyStep struct {
	edit    map[string]string
	exe     string
	argv    []string
	profile string
	stdout  string // a fragment the command's stdout holds
	quiet   bool   // its stdout is empty
}

// cmd is the step's command line.
func (s *journeyStep) cmd() string { return strings.Join(append([]string{s.exe}, s.argv...), " ") }

// approver is the scripted human: it watches the daemon's pending
// requests (`broker approvals --json`) and decides each new one as a
// person would with the tools of issue 33. With contracts, it asks which
// library contract covers the request (`broker contracts offer ID`) and,
// if one does, enables it on the request (`broker contracts enable NAME
// --request ID`), which approves the request and covers the later
// commands its grammar accepts; otherwise it approves the one command
// (`broker approve ID`). Without, it only approves, granting each exact
// command enough uses for the loop: the best a human could do before
// contracts.
type approver struct {
	t          *testing.T // only Errorf, which any goroutine may call
	d          *brokerd
	contracts  bool
	stop, done chan struct{}
	once       sync.Once

	mu   sync.Mutex
	made []string // the decisions: each enable, approve or deny typed
}

// startApprover starts the scripted human on d's queue; end (or the
// test's cleanup) stops it.
func startApprover(t *testing.T, d *brokerd, contracts bool) *approver {
	ap := &approver{t: t, d: d, contracts: contracts, stop: make(chan struct{}), done: make(chan struct{})}
	go ap.watch()
	t.Cleanup(func() { ap.end() })
	return ap
}

// end stops the approver and returns the decisions it made.
func (ap *approver) end() []string {
	ap.once.Do(func() { close(ap.stop) })
	<-ap.done
	ap.mu.Lock()
	defer ap.mu.Unlock()
	return slices.Clone(ap.made)
}

// decided records one decision.
func (ap *approver) decided(cmd string) {
	ap.mu.Lock()
	ap.made = append(ap.made, cmd)
	ap.mu.Unlock()
}

// cli runs `broker ARGS... --state STATE`: its stdout, or an error with
// its stderr. It may run off the test's goroutine.
func (ap *approver) cli(args ...string) (string, error) {
	cmd := exec.Command(bins.broker, append(args, "--state", ap.d.State)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("broker %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

func (ap *approver) watch() {
	defer close(ap.done)
	decided := map[string]bool{}
	for {
		select {
		case <-ap.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		out, err := ap.cli("approvals", "--json")
		var l struct {
			Items []struct {
				ID    string `json:"id"`
				State string `json:"state"`
			} `json:"items"`
		}
		if err == nil {
			err = json.Unmarshal([]byte(out), &l)
		}
		if err != nil {
			ap.t.Errorf("the approver cannot read the queue: %v", err)
			return
		}
		for _, r := range l.Items {
			if r.State != "pending" || decided[r.ID] {
				continue
			}
			decided[r.ID] = true
			if err := ap.decide(r.ID); err != nil {
				ap.t.Errorf("the approver: %v", err)
				return
			}
		}
	}
}

// decide decides request id, as one decision.
func (ap *approver) decide(id string) error {
	if ap.contracts {
		out, err := ap.cli("contracts", "offer", id, "--json")
		if err != nil {
			return err
		}
		var o struct {
			Offers []struct {
				Name string `json:"name"`
			} `json:"offers"`
		}
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			return fmt.Errorf("contracts offer %s: %v\n%s", id, err, out)
		}
		if len(o.Offers) > 0 { // the one covering most of this workspace's requests comes first
			name := o.Offers[0].Name
			ap.decided("contracts enable " + name + " --request " + id)
			_, err := ap.cli("contracts", "enable", name, "--request", id)
			return err
		}
	}
	ap.decided("approve " + id + " --uses 20")
	_, err := ap.cli("approve", id, "--uses", "20")
	return err
}

// journeyRun is one step as the agent saw it end.
type journeyRun struct {
	step     *journeyStep
	handle   string
	contract string // the contract that admitted it; "" for an exact lease
}

// runLoop is the scripted agent: one MCP connection to `broker mcp` in
// ws, each step's edit, then its run, waiting (on the approval, then on
// the action) until it ended; each must exit 0. It stops when ap, which
// decides its requests, has stopped.
func runLoop(t *testing.T, d *brokerd, ws string, steps []journeyStep, ap *approver) []journeyRun {
	t.Helper()
	c := startGo(t, mcpServer(d.State, ws), "", nil)
	var runs []journeyRun
	for i := range steps {
		s := &steps[i]
		writeTree(t, ws, s.edit)
		a := c.action("run", map[string]any{"executable": s.exe, "argv": s.argv, "profile": s.profile})
		for deadline := time.Now().Add(daemonSafety); a.State == "approval_required" || a.WaitTimeout; {
			select {
			case <-ap.done:
				t.Fatalf("step %d, %s: still %s, and the approver stopped", i+1, s.cmd(), a.State)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("step %d, %s: still %s after %s", i+1, s.cmd(), a.State, daemonSafety)
			}
			if a.Handle != nil {
				a = c.action("wait", map[string]any{"handle": *a.Handle})
			} else {
				a = c.action("wait", map[string]any{"approval_id": a.Approval.RequestID})
			}
		}
		r := a.Result
		if a.State != "terminal" || r.Outcome != "exited" || r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout.Text, s.stdout) ||
			(s.quiet && r.Stdout.Text != "") {
			t.Fatalf("step %d, %s: %s %+v\nstdout:\n%s\nstderr:\n%s", i+1, s.cmd(), a.State, r, r.Stdout.Text, r.Stderr.Text)
		}
		run := journeyRun{step: s, handle: *a.Handle}
		if r.Contract != nil {
			run.contract = *r.Contract
		}
		runs = append(runs, run)
	}
	return runs
}

// checkReceipts requires one verified receipt per run, each with the
// run's concrete argv and, under a contract, that contract's parse of
// it; and that `broker receipts verify` passes.
func checkReceipts(t *testing.T, d *brokerd, runs []journeyRun) {
	t.Helper()
	ids := map[string]bool{}
	for i, r := range runs {
		rc := d.Receipt(r.handle)
		ids[rc.ID] = true
		if !slices.Equal(rc.Identity.Argv, r.step.argv) {
			t.Errorf("step %d, %s: the receipt's argv is %q", i+1, r.step.cmd(), rc.Identity.Argv)
		}
		switch {
		case r.contract == "" && rc.Contract != nil:
			t.Errorf("step %d, %s: the receipt names contract %s, the result none", i+1, r.step.cmd(), rc.Contract.Name)
		case r.contract != "" && (rc.Contract == nil || rc.Contract.Name != r.contract || len(rc.Contract.Args) != len(r.step.argv)):
			t.Errorf("step %d, %s: the receipt does not hold contract %s's parse of the argv: %+v", i+1, r.step.cmd(), r.contract, rc.Contract)
		}
	}
	if len(ids) != len(runs) {
		t.Errorf("%d receipts for %d actions", len(ids), len(runs))
	}
	d.Verify()
}

// distinctCommands is how many different commands the loop runs: the
// fewest exact approvals it can take.
func distinctCommands(steps []journeyStep) int {
	seen := map[string]bool{}
	for _, s := range steps {
		seen[s.profile+"\x00"+strings.Join(append([]string{s.exe}, s.argv...), "\x00")] = true
	}
	return len(seen)
}

// committed requires that the loop's commits are the repository's
// history after its first, read on the host, and nothing is left
// uncommitted.
func committed(t *testing.T, ws string, steps []journeyStep) {
	t.Helper()
	want := "start\n"
	for _, s := range steps {
		if i := slices.Index(s.argv, "-m"); len(s.argv) > 0 && s.argv[0] == "commit" && i >= 0 {
			want = s.argv[i+1] + "\n" + want
		}
	}
	if got := hostGit(t, ws, "log", "--format=%s"); got != want {
		t.Errorf("host: the history is\n%s\nwant\n%s", got, want)
	}
	if st := hostGit(t, ws, "status", "--porcelain"); st != "" {
		t.Errorf("host: left uncommitted:\n%s", st)
	}
}

// journey runs the loop twice, each time in a fresh workspace that setup
// fills, on a daemon of its own: before (exact approvals only) and after
// (contracts offered); it logs both counts and requires at most 3
// decisions after, every action with its own receipt, and the commits
// made.
func journey(t *testing.T, setup func(t *testing.T, ws string), steps []journeyStep) {
	if len(steps) != 20 {
		t.Fatalf("the loop has %d commands, want 20", len(steps))
	}
	counts := map[bool][]string{}
	for _, contracts := range []bool{false, true} {
		d := startJourneyBroker(t)
		ws := d.newAgent(t).WS
		setup(t, ws)
		ap := startApprover(t, d, contracts)
		runs := runLoop(t, d, ws, steps, ap)
		counts[contracts] = ap.end()
		checkReceipts(t, d, runs)
		committed(t, ws, steps)
		if contracts && !slices.ContainsFunc(runs, func(r journeyRun) bool { return r.contract != "" }) {
			t.Errorf("no command of the loop ran under a contract")
		}
	}
	before, after := counts[false], counts[true]
	t.Logf("%d commands (%d distinct): before, exact approvals only: %d decisions (%d with the default single use each); after, with contracts: %d decisions:\n  %s",
		len(steps), distinctCommands(steps), len(before), len(steps), len(after), strings.Join(after, "\n  "))
	// Exact approvals take one decision per distinct command; a loaded
	// host has once taken one more (a run that asked again).
	if n, d := len(before), distinctCommands(steps); n < d || n > d+1 {
		t.Errorf("exact approvals took %d decisions for %d distinct commands:\n  %s", len(before), distinctCommands(steps), strings.Join(before, "\n  "))
	}
	if len(after) > 3 {
		t.Errorf("the loop took %d human decisions, want at most 3", len(after))
	}
}

// startJourneyBroker starts a daemon whose operator has a git identity,
// which commits inside the sandbox take.
func startJourneyBroker(t *testing.T) *brokerd {
	home := t.TempDir()
	writeTree(t, home, map[string]string{".gitconfig": "[user]\n\tname = Journey Operator\n\temail = operator@example.invalid\n"})
	return startOperatorBrokerEnv(t, []string{"HOME=" + home, "XDG_CONFIG_HOME="})
}

// gitInit makes ws a repository with one commit of what it holds, on the
// host: the project the agent is given.
func gitInit(t *testing.T, ws string) {
	hostGit(t, ws, "init", "-q", "-b", "main")
	hostGit(t, ws, "add", "-A")
	hostGit(t, ws, "-c", "user.name=Journey Operator", "-c", "user.email=operator@example.invalid", "commit", "-q", "-m", "start")
}

// TestMCPJourneyGo: the loop in a Go module — go test ./... eight times,
// four go test -run X ./calc, two go build ./..., git status, diff, add
// -A, two commits, gofmt -l . — in at most 3 human decisions.
func TestMCPJourneyGo(t *testing.T) {
	const gotool, gofmt = "/usr/local/go/bin/go", "/usr/local/go/bin/gofmt"
	need(t, gotool)
	need(t, gofmt)
	lookPath(t, "git")
	calc := func(funcs ...string) string {
		src := "// Package calc is arithmetic for the journey.\npackage calc\n"
		for _, f := range funcs {
			op := map[string]string{"Add": "+", "Sub": "-", "Mul": "*"}[f]
			src += fmt.Sprintf("\n// %s is a %s b.\nfunc %s(a, b int) int { return a %s b }\n", f, op, f, op)
		}
		return src
	}
	tests := func(funcs ...string) string {
		src := "package calc\n\nimport \"testing\"\n"
		for _, f := range funcs {
			want := map[string]string{"Add": "5", "Sub": "-1", "Mul": "6"}[f]
			src += fmt.Sprintf("\nfunc Test%s(t *testing.T) {\n\tif got := %s(2, 3); got != %s {\n\t\tt.Fatal(got)\n\t}\n}\n", f, f, want)
		}
		return src
	}
	app := func(line string) string {
		return "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/journey/calc\"\n)\n\nfunc main() {\n\t" + line + "\n}\n"
	}
	setup := func(t *testing.T, ws string) {
		writeTree(t, ws, map[string]string{"go.mod": "module example.com/journey\n\ngo 1.22\n", "calc/calc.go": calc("Add"),
			"calc/calc_test.go": tests("Add"), "cmd/app/main.go": app("fmt.Println(calc.Add(2, 3))")})
		gitInit(t, ws)
	}
	goStep := func(edit map[string]string, stdout string, argv ...string) journeyStep {
		return journeyStep{edit: edit, exe: gotool, argv: argv, profile: "long", stdout: stdout}
	}
	git := func(edit map[string]string, stdout string, argv ...string) journeyStep {
		return journeyStep{edit: edit, exe: "git", argv: argv, profile: "short", stdout: stdout}
	}
	ok := "ok  \texample.com/journey/calc"
	steps := []journeyStep{
		goStep(nil, ok, "test", "./..."),
		git(nil, "nothing to commit", "status"),
		goStep(map[string]string{"calc/calc.go": calc("Add", "Sub"), "calc/calc_test.go": tests("Add", "Sub")}, ok, "test", "./..."),
		goStep(nil, ok, "test", "-run", "TestSub", "./calc"),
		goStep(nil, ok, "test", "-run", "TestAdd", "./calc"),
		goStep(nil, "", "build", "./..."),
		goStep(map[string]string{"calc/calc.go": calc("Add", "Sub", "Mul"), "calc/calc_test.go": tests("Add", "Sub", "Mul")}, ok, "test", "./..."),
		goStep(nil, ok, "test", "-run", "^TestMul$", "./calc"),
		goStep(map[string]string{"cmd/app/main.go": app("fmt.Println(calc.Add(2, 3), calc.Sub(2, 3))")}, ok, "test", "./..."),
		{exe: gofmt, argv: []string{"-l", "."}, profile: "short", quiet: true}, // every file is formatted
		git(nil, "func Mul", "diff"),
		git(nil, "", "add", "-A"),
		git(nil, "calc: Sub and Mul", "commit", "-m", "calc: Sub and Mul"),
		goStep(map[string]string{"cmd/app/main.go": app("fmt.Println(calc.Add(2, 3), calc.Sub(2, 3), calc.Mul(2, 3))")}, ok, "test", "./..."),
		goStep(nil, "--- PASS: TestSub", "test", "-run", "TestAdd|TestSub", "-v", "./calc"),
		goStep(nil, "", "build", "./..."),
		goStep(map[string]string{"calc/calc.go": strings.Replace(calc("Add", "Sub", "Mul"), "arithmetic", "integer arithmetic", 1)}, ok, "test", "./..."),
		goStep(nil, ok, "test", "./..."),
		goStep(nil, ok, "test", "./..."),
		git(nil, "app: print the difference and the product", "commit", "-a", "-m", "app: print the difference and the product"),
	}
	journey(t, setup, steps)
}

// TestMCPJourneyNpm: the loop in an npm package — npm test eight times,
// four npm run SCRIPT, two npm run build, git status, diff, add -A, two
// commits, npm run lint — in at most 3 human decisions.
func TestMCPJourneyNpm(t *testing.T) {
	lookPath(t, "node")
	lookPath(t, "npm")
	lookPath(t, "git")
	lib := func(funcs ...string) string {
		src := "'use strict';\n"
		for _, f := range funcs {
			src += fmt.Sprintf("exports.%s = (a, b) => a %s b;\n", f, map[string]string{"add": "+", "sub": "-", "mul": "*"}[f])
		}
		return src
	}
	tests := func(funcs ...string) string {
		src := "'use strict';\nconst assert = require('node:assert');\nconst lib = require('./lib.js');\n"
		for _, f := range funcs {
			src += fmt.Sprintf("assert.strictEqual(lib.%s(2, 3), %s);\n", f, map[string]string{"add": "5", "sub": "-1", "mul": "6"}[f])
		}
		return src + "console.log('tests passed:', process.argv[2] || 'all');\n"
	}
	setup := func(t *testing.T, ws string) {
		writeTree(t, ws, map[string]string{
			"package.json": `{
  "name": "journey",
  "version": "1.0.0",
  "private": true,
  "scripts": {
    "test": "node test.js",
    "test:unit": "node test.js unit",
    "test:integration": "node test.js integration",
    "typecheck": "node check.js types",
    "format:check": "node check.js format",
    "build": "node build.js",
    "lint": "node check.js lint"
  }
}
`,
			".npmrc":     "update-notifier=false\nfund=false\naudit=false\n",
			".gitignore": "dist/\nnode_modules/\n",
			"lib.js":     lib("add"),
			"test.js":    tests("add"),
			"check.js": "'use strict';\nconst src = require('node:fs').readFileSync('lib.js', 'utf8');\n" +
				"if (src.includes('var ')) { console.error('lib.js uses var'); process.exit(1); }\nconsole.log(process.argv[2] + ': clean');\n",
			"build.js": "'use strict';\nconst fs = require('node:fs');\nfs.mkdirSync('dist', { recursive: true });\n" +
				"fs.copyFileSync('lib.js', 'dist/lib.js');\nconsole.log('built dist/lib.js');\n",
		})
		gitInit(t, ws)
	}
	npm := func(edit map[string]string, stdout string, argv ...string) journeyStep {
		return journeyStep{edit: edit, exe: "npm", argv: argv, profile: "standard", stdout: stdout}
	}
	git := func(edit map[string]string, stdout string, argv ...string) journeyStep {
		return journeyStep{edit: edit, exe: "git", argv: argv, profile: "short", stdout: stdout}
	}
	passed := "tests passed: all"
	steps := []journeyStep{
		npm(nil, passed, "test"),
		git(nil, "nothing to commit", "status"),
		npm(map[string]string{"lib.js": lib("add", "sub"), "test.js": tests("add", "sub")}, passed, "test"),
		npm(nil, "tests passed: unit", "run", "test:unit"),
		npm(nil, "built dist/lib.js", "run", "build"),
		npm(map[string]string{"lib.js": lib("add", "sub", "mul"), "test.js": tests("add", "sub", "mul")}, passed, "test"),
		npm(nil, "tests passed: integration", "run", "test:integration"),
		npm(nil, "lint: clean", "run", "lint"),
		npm(map[string]string{"lib.js": "// Arithmetic for the journey.\n" + lib("add", "sub", "mul")}, passed, "test"),
		git(nil, "exports.mul", "diff"),
		git(nil, "", "add", "-A"),
		git(nil, "lib: sub and mul", "commit", "-m", "lib: sub and mul"),
		npm(map[string]string{"test.js": tests("mul", "sub", "add")}, passed, "test"),
		npm(nil, "types: clean", "run", "typecheck"),
		npm(nil, "built dist/lib.js", "run", "build"),
		npm(map[string]string{"lib.js": "// Integer arithmetic for the journey.\n" + lib("add", "sub", "mul")}, passed, "test"),
		npm(nil, "format: clean", "run", "format:check"),
		npm(nil, passed, "test"),
		npm(nil, passed, "test"),
		git(nil, "lib: say what it is", "commit", "-a", "-m", "lib: say what it is"),
	}
	journey(t, setup, steps)
}
