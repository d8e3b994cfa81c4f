package wire

import (
	"bytes"
	"errors"
	"strings"
)

// Sample values used by the golden vectors, the named rejection tests and
// the CDDL checks. Every MsgType has at least one sample; the "full"
// samples set every optional field so that the schema walk sees them all.

// digest returns a recognisable 32-byte fake SHA-256 value.
func digest(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func sampleRequest() ActionRequest {
	return ActionRequest{Executable: "make", Argv: []string{"test", "-j2"}, Cwd: ".", Profile: ProfileStandard}
}

func sampleFile(p string, b byte) FileIdentity {
	return FileIdentity{Path: p, Dev: 2049, Ino: 1234567, Mode: 0o100755, UID: 1000,
		Size: 35840, MtimeNs: 1700000000123456789, CtimeNs: -5, SHA256: digest(b)}
}

func samplePolicy() Policy {
	return Policy{ReadExec: []string{"/usr", "/etc"}, ReadWrite: []string{},
		Devices: []string{"/dev/null", "/dev/urandom"}, MinLandlockABI: 4,
		Pins: []PathPin{{Path: "/dev/null", Dev: 5, Ino: 4}, {Path: "/dev/urandom", Dev: 5, Ino: 9},
			{Path: "/etc", Dev: 2049, Ino: 131073}, {Path: "/usr", Dev: 2049, Ino: 262145}}}
}

func sampleInterpreter() *Interpreter {
	return &Interpreter{File: sampleFile("/usr/bin/python3.12", 0xbb), Arg: "-E",
		Chain: []string{"/usr/bin/python3"}}
}

func sampleIdentity(interp bool) CommandIdentity {
	id := CommandIdentity{
		Executable:   Executable{Requested: "make", File: sampleFile("/usr/bin/make", 0xaa)},
		Argv:         []string{"test"},
		Cwd:          DirIdentity{Path: "src", Dev: 2049, Ino: 77, MntID: 30},
		Workspace:    DirIdentity{Path: "/home/u/project", Dev: 2049, Ino: 76, MntID: 30},
		Profile:      ProfileShort,
		Env:          []EnvVar{{Name: "LANG", Value: "C.UTF-8"}, {Name: "PATH", Value: "/usr/bin:/bin"}},
		Policy:       samplePolicy(),
		PolicyDigest: digest(0xcc),
		Binding:      SealedSnapshot,
	}
	if interp {
		id.Binding = InPlace
		id.Egress = []string{"127.0.0.1:4873", "[2001:db8::1]:443", "registry.npmjs.org:443"}
		id.Executable = Executable{Requested: "./run.py", Chain: []string{"/home/u/project/run"},
			File: sampleFile("/home/u/project/run.py", 0xaa), Interpreter: sampleInterpreter()}
	}
	return id
}

func sampleApproval(interp bool) ApprovalView {
	return ApprovalView{ID: "apr-1", Goal: "g-1", GoalRevision: 2, Session: "s-1",
		Identity: sampleIdentity(interp), Fingerprint: digest(0xdd),
		Limitations: "The target runs as your user; the network is closed.", CreatedUnix: 1700000000, State: RequestPending}
}

// sampleProgram is the file a grant of the go contracts binds.
func sampleProgram() ProgramFile {
	return ProgramFile{Path: "/usr/local/go/bin/go", SHA256: digest(0xa0)}
}

func sampleLease() LeaseView {
	return LeaseView{ID: "lease-1", ApprovalID: "apr-1", Goal: "g-1", GoalRevision: 2,
		Fingerprint: digest(0xdd), ExpiresUnix: 1700003600, UsesLeft: 3, Revoked: true,
		Executable: "go", Argv: []string{"test", "./..."}}
}

func sampleResult() *Result {
	code := int32(0)
	return &Result{Outcome: Exited, ExitCode: &code, GroupGone: true,
		Stdout: Stream{Text: "ok\n", ObservedBytes: 3, RedactedBytes: 3, TextHeadBytes: 3,
			RetainedHeadBytes: 3, RetainedBytes: 3},
		Stderr: Stream{Text: "…\\x1b[0m", ObservedBytes: 70000, RedactedBytes: 70000, TextHeadBytes: 16384,
			TextTailBytes: 16384, RetainedHeadBytes: 32768, RetainedBytes: 65536, DroppedBytes: 4464, Truncated: true},
		ReceiptID: "rcpt-1",
		ProtectedChanges: []ProtectedChange{{Path: ".git/hooks/pre-commit", Before: "absent",
			After: "sha256:" + strings.Repeat("ab", 32) + " mode:0755"}}}
}

// sampleEgressResult is the result of an action with an egress grant:
// one connection through, one refused.
func sampleEgressResult() *Result {
	r := sampleResult()
	r.Egress = &Egress{Granted: []string{"127.0.0.1:4873", "registry.npmjs.org:443"}, Total: 2, Refused: 1,
		Totals: []EgressTotal{{Entry: "registry.npmjs.org:443", Connections: 1, Up: 517, Down: 40960}},
		Connections: []EgressConnection{
			{Host: "registry.npmjs.org", Port: 443, Address: "104.16.1.34", SNI: "registry.npmjs.org", Up: 517, Down: 40960,
				Start: 1700000000000000000, End: 1700000000250000000, Allowed: true},
			{Host: "evil.example", Port: 443, Start: 1700000000300000000, End: 1700000000300000001,
				Reason: "evil.example:443 is not on lease l-1"}}}
	return r
}

func sampleSpawn(full bool) *SpawnRequest {
	r := &SpawnRequest{
		Protocol:   SpawnProtocol,
		Argv:       []string{"make", "test", "a b;c|d$(e)\n"},
		Env:        []EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}},
		Workspace:  DirIdentity{Path: "/home/u/project", Dev: 2049, Ino: 76, MntID: 30},
		Cwd:        DirIdentity{Path: ".", Dev: 2049, Ino: 76, MntID: 30},
		Executable: sampleFile("/usr/bin/make", 0xaa),
		Profile:    ProfileLong,
		Policy:     samplePolicy(),
		Home:       "/run/warrant/a1/home",
		Tmp:        "/run/warrant/a1/tmp",
		Binding:    InPlace,
	}
	if full {
		r.Interpreter = sampleInterpreter()
		r.Snapshots, r.Binding = true, SealedSnapshot
		r.Protect = []ProtectBind{{Path: ".git"}, {Path: ".git/config", ReadOnly: true}, {Path: ".git/hooks", ReadOnly: true}}
		r.EgressPort, r.ObserveWrites, r.AuditDenials = 41234, true, true
	}
	return r
}

// sampleReadyInPlace is the Ready of an in-place launch: bound by a
// witness, no digest measured by the launcher.
func sampleReadyInPlace() *Ready {
	r := sampleReady(false)
	r.Binding, r.BoundBy, r.ExecutedSHA256 = InPlace, Witness, nil
	return r
}

func sampleReady(full bool) *Ready {
	r := &Ready{LandlockABI: 7, HandledFS: 0xffff, HandledNet: 3, Scoped: 3,
		SeccompDigest: digest(0x5c), Binding: SealedSnapshot, ExecutedSHA256: digest(0xaa),
		Workspace: DirIdentity{Path: "/home/u/project", Dev: 2049, Ino: 76, MntID: 30},
		Cwd:       DirIdentity{Path: "src", Dev: 2049, Ino: 77, MntID: 30}}
	if full {
		r.InterpreterSHA256 = digest(0xbb)
		r.Binding = Unbound
	}
	return r
}

// namedSample is one valid message with a vector name.
type namedSample struct {
	name string
	msg  Message
}

// samples returns the valid messages the golden vectors are made from.
func samples() []namedSample {
	three := int32(3)
	full := sampleRequest()
	full.Goal, full.Session, full.Step = "g-1", "s-1", "build"
	full.Executable = "/usr/bin/env"
	full.Argv = []string{"a b", ";", "|", "$(rm -rf ~)", "line\nbreak", "ünïcødé", ""}
	full.Cwd = "src/pkg"
	full.Egress = []string{"npm", "Registry.NPMjs.org:443", "127.0.0.1:4873"}
	return []namedSample{
		{"submit", &Submit{Workspace: "/home/u/project", Request: sampleRequest()}},
		{"submit-full", &Submit{Workspace: "/home/u/project", Request: full}},
		{"submit-call-id", &Submit{Workspace: "/home/u/project", Request: sampleRequest(), CallID: "call-1"}},
		{"query", &Query{Handle: "act-1"}},
		{"wait", &Wait{Handle: "act-1", BudgetMs: 30000}},
		{"wait-zero-budget", &Wait{Handle: "act-1"}},
		{"cancel", &Cancel{Handle: "act-1"}},
		{"cancel-reason", &Cancel{Handle: "act-1", Reason: "taking too long"}},
		{"goal-create", &GoalCreate{Title: "make the tests pass"}},
		{"goal-revise", &GoalRevise{Goal: "g-1"}},
		{"approval-wait", &ApprovalWait{RequestID: "apr-1", BudgetMs: 5000}},
		{"follow", &Follow{Handle: "act-1"}},
		{"follow-from", &Follow{Handle: "act-1", StdoutFrom: 1 << 20, StderrFrom: 12}},
		{"follow-stream-from", &Follow{Handle: "act-1", Stream: Stderr, StderrFrom: 70000}},
		{"follow-page", &Follow{Handle: "act-1", StdoutFrom: 32768, Limit: 32768}},
		{"goal-create-spec", &GoalCreate{Title: "build", Spec: `{"title":"build","workspace":"/home/u/project","steps":[]}`}},
		{"goal-revise-spec", &GoalRevise{Goal: "g-1", Spec: `{"title":"build","workspace":"/home/u/project","steps":[]}`}},
		{"goal-show", &GoalShow{Goal: "g-1"}},
		{"goal-verify", &GoalVerify{Goal: "g-1"}},
		{"goal-list", &GoalList{}},
		{"approve", &Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 600}},
		{"approve-binding", &Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 600, Binding: InPlace}},
		{"approve-egress", &Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 600, SetEgress: true,
			Egress: []string{"proxy.golang.org:443", "sum.golang.org:443"}}},
		{"approve-egress-none", &Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 600, SetEgress: true}},
		{"deny", &Deny{RequestID: "apr-1"}},
		{"deny-reason", &Deny{RequestID: "apr-1", Reason: "not this argv"}},
		{"revoke", &Revoke{LeaseID: "lease-1"}},
		{"revoke-contract", &Revoke{LeaseID: "lease-1", Contract: true}},
		{"list", &List{Kind: ListApprovals}},
		{"list-unknown", &List{Kind: ListActions, UnknownOnly: true}},
		{"list-page", &List{Kind: ListLeases, Limit: 50, After: "lease-1"}},
		{"resolve", &Resolve{Handle: "act-1", Classification: ClassStop, Note: "killed by hand"}},
		{"goal-set-state", &GoalSetState{Goal: "g-1", State: GoalPaused}},
		{"goal-attest", &GoalAttest{Goal: "g-1", Step: "review", Statement: "I looked at the page; it renders"}},
		{"contract-enable", &ContractEnable{Workspace: "/home/u/project", Name: "go-test", Uses: 20, TTLSeconds: 3600, Profile: ProfileStandard}},
		{"contract-enable-executable", &ContractEnable{Workspace: "/home/u/project", Name: "go-test", Uses: 1, TTLSeconds: 60, Profile: ProfileLong, Executable: "/usr/local/go/bin/go"}},
		{"contract-enable-request", &ContractEnable{Name: "go-test", Uses: 20, TTLSeconds: 28800, Request: "apr-1"}},
		{"contract-enable-request-full", &ContractEnable{Workspace: "/home/u/project", Name: "go-test", Uses: 20, TTLSeconds: 28800,
			Profile: ProfileLong, Executable: "/usr/local/go/bin/go", Request: "apr-1"}},
		{"contract-offer", &ContractOffer{Request: "apr-1"}},
		{"accepted", &Accepted{Handle: "act-1"}},
		{"accepted-lease", &Accepted{Handle: "act-1", Lease: "lease-1", UsesLeft: 2}},
		{"accepted-contract", &Accepted{Handle: "act-1", Lease: "lease-1", UsesLeft: 2, Contract: "go-test"}},
		{"approval-required", &ApprovalRequired{Request: sampleApproval(false)}},
		{"approval-required-script", &ApprovalRequired{Request: sampleApproval(true)}},
		{"status-running", &Status{Handle: "act-1", State: StateRunning}},
		{"status-terminal", &Status{Handle: "act-1", State: StateTerminal, Result: sampleResult()}},
		{"status-terminal-egress", &Status{Handle: "act-1", State: StateTerminal, Result: sampleEgressResult()}},
		{"status-unknown", &Status{Handle: "act-2", State: StateUnknown, Result: &Result{
			Outcome: OutcomeUnknown, Signal: 9, Error: Errorf(CodeUnknownOutcome, "the group could not be confirmed gone")}}},
		{"wait-timeout", &WaitTimeout{Handle: "act-1", State: StateRunning}},
		{"cancel-reply", &CancelReply{Handle: "act-1", Result: CancelAlreadyTerminal}},
		{"lease-granted", &LeaseGranted{Lease: sampleLease()}},
		{"lease-granted-contract", &LeaseGranted{Lease: LeaseView{ID: "lease-2", ApprovalID: "apr-2", Goal: "default", GoalRevision: 1,
			Fingerprint: digest(0xdc), ExpiresUnix: 1700028800, UsesLeft: 20, Executable: "/usr/local/go/bin/go", Profile: ProfileLong,
			Contract: "go-test", Program: &ProgramFile{Path: "/usr/local/go/bin/go", SHA256: digest(0xa0)}, Settled: 2}}},
		{"listing-empty", &Listing{}},
		{"listing-truncated", &Listing{Leases: []LeaseView{sampleLease()}, Truncated: true}},
		{"listing-full", &Listing{Approvals: []ApprovalView{sampleApproval(true)}, Leases: []LeaseView{sampleLease()},
			Actions: []ActionView{
				{Handle: "act-1", Executable: "make", Fingerprint: digest(0xdd), State: StateAccepted, CreatedUnix: 1},
				{Handle: "act-2", Session: "s-1", Goal: "g-1", Executable: "/usr/bin/env", Fingerprint: digest(0xde),
					State: StateUnknown, Outcome: OutcomeUnknown, CreatedUnix: -1},
				{Handle: "act-3", Executable: "sh", Argv: []string{"-c", "exit 3"}, Fingerprint: digest(0xdf),
					State: StateTerminal, Outcome: Exited, ExitCode: &three, CreatedUnix: 2},
				{Handle: "act-4", Executable: "sleep", Argv: []string{"99"}, ArgvTruncated: true, Fingerprint: digest(0xe0),
					State: StateTerminal, Outcome: Signaled, Signal: 9, CreatedUnix: 3},
			}}},
		{"goal", &GoalReply{Goal: "g-1", Revision: 3, State: GoalActive}},
		{"goal-view", &GoalReply{Goal: "g-1", Revision: 3, State: GoalActive, View: `{"goal":"g-1"}`}},
		{"goal-listing-empty", &GoalListing{}},
		{"goal-listing", &GoalListing{Goals: []GoalReply{{Goal: "default", Revision: 1, State: GoalActive}, {Goal: "g-1", Revision: 3, State: GoalPaused}}}},
		{"error-step-blocked", Errorf(CodeStepBlocked, "step test of goal g-1 depends on build, which is not VERIFIED_DONE under revision 3")},
		{"ok", &OK{}},
		{"approval-state", &ApprovalState{RequestID: "apr-1", State: RequestPending}},
		{"approval-state-approved", &ApprovalState{RequestID: "apr-1", State: RequestApproved, LeaseID: "lease-1"}},
		{"approval-state-expired", &ApprovalState{RequestID: "apr-1", State: RequestExpired, Reason: "no one decided it within 30m0s"}},
		{"contract-offers-none", &ContractOffers{}},
		{"contract-offers", &ContractOffers{Offers: []ContractOfferItem{
			{Name: "go-test", Description: "go test of packages inside the workspace", Usage: "go test [-v] [PACKAGE...]",
				Covers: []string{"/usr/local/go/bin/go test -run TestX ./pkg", "/usr/local/go/bin/go test ./..."}, Program: sampleProgram()},
			{Name: "go", Usage: "go (test|vet) [PACKAGE...]", Covers: []string{"/usr/local/go/bin/go test -run TestX ./pkg"}, Program: sampleProgram()}}}},
		// A cover line at its cap: an earlier request's long command
		// (git diff of many files), cut to MaxCoverLine.
		{"contract-offers-long-cover", &ContractOffers{Offers: []ContractOfferItem{{Name: "git", Usage: "git diff [-- PATH...]",
			Covers:  []string{"git status", "git diff -- " + strings.Repeat("f ", (MaxCoverLine-len("git diff -- "))/2)},
			Program: ProgramFile{Path: "/usr/bin/git", SHA256: digest(0xa1)}}}}},
		{"output-chunk", &OutputChunk{Handle: "act-1", Stream: Stderr, Data: []byte("warning: \x1b[1mbold\xff\n")}},
		{"output-chunk-not-streamed", &OutputChunk{Handle: "act-1", Stream: Stdout, Offset: 1 << 20, NotStreamed: 70000}},
		{"output-chunk-at-offset", &OutputChunk{Handle: "act-1", Stream: Stdout, Offset: 1<<20 + 70000, Data: []byte("line\n")}},
		{"output-chunk-heartbeat", &OutputChunk{Handle: "act-1"}},
		{"error", Errorf(CodeArgumentsInvalid, "argv[3]: contains a NUL byte")},
		{"error-detail", Explain(CodePathInvalid, errors.New("openat2 src: no such file or directory"),
			"the cwd \"src\" does not exist in the workspace")},
		{"error-workspace-aliased", Errorf(CodeWorkspaceAliased, "1 file in the workspace is a hard link to a file outside it: \"notes.txt\"")},
		{"spawn-request", sampleSpawn(false)},
		{"spawn-request-script", sampleSpawn(true)},
		{"proceed", &Proceed{}},
		{"prepare", samplePrepare()},
		{"prepare-none", &Prepare{Protocol: SpawnProtocol}},
		{"ready", sampleReady(false)},
		{"ready-unbound-script", sampleReady(true)},
		{"ready-in-place", sampleReadyInPlace()},
		{"refused", &Refused{Code: CodeIdentityDrift, Detail: "cwd: inode changed"}},
		{"exec-failed", &ExecFailed{Errno: 8}},
	}
}

// samplePrepare is the Prepare of two /etc entries.
func samplePrepare() *Prepare {
	return &Prepare{Protocol: SpawnProtocol, Entries: []PathPin{{Path: "/etc/hosts", Dev: 2049, Ino: 300}, {Path: "/etc/passwd", Dev: 2049, Ino: 301}}}
}
