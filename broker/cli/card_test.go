package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"warrant/broker"
	"warrant/broker/client"
	"warrant/broker/internal/cardtext"
	"warrant/broker/internal/seam"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/internal/envpolicy"
	"warrant/wire"
)

// A realistic host's sentences: why no mount namespace could be had, and
// why no cgroup is writable (runner.New's and DetectCgroups' words).
const (
	noUserNS = "this broker has no CAP_SYS_ADMIN and cannot start a process in a user namespace of its own " +
		"(fork/exec /usr/local/libexec/warrant/launcher: operation not permitted)"
	noCgroup = "No cgroup is writable by this broker (no cgroup v2 hierarchy is mounted; memory is not limited: no cgroup v2 directory " +
		"is writable by this broker, and no cgroup v1 memory hierarchy is mounted; pids is not limited: no cgroup v2 directory is " +
		"writable by this broker, and no cgroup v1 pids hierarchy is mounted). To get the limits, give it a cgroup v2 subtree with " +
		"the memory and pids controllers delegated: " + lifecycle.Delegate + "."
)

// cardCase is an approval request as a broker on some host makes it.
type cardCase struct {
	name    string
	state   string // "" for the default
	id      wire.CommandIdentity
	session string
	by, why string // protection
	enf     lifecycle.Enforcement
	says    []string // on the short card (spaces as wrapped rows join them)
}

func (c *cardCase) view() *wire.ApprovalView {
	cache := ""
	if len(c.id.Policy.ReadWrite) > 0 {
		cache = c.id.Policy.ReadWrite[0]
	}
	return &wire.ApprovalView{ID: "ar-e0dd3dded5868f000623fd2d", Goal: "default", GoalRevision: 1, Session: c.session,
		Identity: c.id, Fingerprint: bytes.Repeat([]byte{0xfe}, 32), CreatedUnix: 1_796_000_000, State: wire.RequestPending,
		Limitations: cardtext.Limitations(&c.id, 17, cache, cardtext.Protection(c.by, c.why), c.enf.Sentence(c.id.Profile, 2<<30, 256))}
}

// realisticEnv is the environment a broker gives: LANG, the fixed PATH
// and TERM, the declared variables and the cache's.
func realisticEnv(cache string, declared ...wire.EnvVar) []wire.EnvVar {
	env := append([]wire.EnvVar{{Name: "LANG", Value: "C.UTF-8"}, {Name: "PATH", Value: envpolicy.SanitizedPath}, {Name: "TERM", Value: "dumb"},
		{Name: "UV_LINK_MODE", Value: "copy"}}, declared...)
	for _, n := range []string{"CARGO_HOME", "GOCACHE", "GOMODCACHE", "GRADLE_USER_HOME", "PIP_CACHE_DIR", "XDG_CACHE_HOME", "npm_config_cache"} {
		env = append(env, wire.EnvVar{Name: n, Value: cache + "/" + strings.ToLower(n)})
	}
	slices.SortFunc(env, func(a, b wire.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return env
}

// etcSplit is /etc granted entry by entry without its secrets.
func etcSplit(pol wire.Policy) wire.Policy {
	pol.Devices = []string{"/dev/null", "/dev/random", "/dev/urandom", "/dev/zero"}
	pol.ReadEntries = []string{"/etc/alternatives", "/etc/ca-certificates", "/etc/passwd", "/etc/ssl/certs"}
	for _, s := range []string{".pwd.lock", "default/cacerts", "gshadow", "gshadow-", "polkit-1", "postgresql/15/main/pg_hba.conf",
		"postgresql/15/main/pg_ident.conf", "security/opasswd", "shadow", "shadow-", "ssl/private"} {
		pol.Excluded = append(pol.Excluded, "/etc/"+s)
	}
	return pol
}

func file(path string) wire.FileIdentity {
	return wire.FileIdentity{Path: path, SHA256: bytes.Repeat([]byte{0x25, 0x40, 0x87, 0x99}, 8), Mode: 0o755, Size: 3_000_000}
}

func cardCases() []cardCase {
	const cache = "/tmp/sc/caches/7a04ce45f9a7920be5825ee4b72a82aa/data"
	const home = "/home/alice/.local/state/warrant/caches/7a04ce45f9a7920be5825ee4b72a82aa/data"
	const ws = "/home/alice/src/webapp"
	const long = "/home/alice/src/github.com/example-org/a-rather-long-repository-name"
	const pyenv = "/home/alice/.pyenv/versions/3.12.1"
	git := &wire.GitIdentity{Name: "Seed 03a4366b maintainers", Email: "maintainers@users.noreply.a-seed-03a4366b.example"}
	return []cardCase{{
		name: "git status on a cgroup v1 host", state: "/tmp/sc", by: wire.ProtectedByMount,
		enf: lifecycle.Enforcement{Memory: lifecycle.CgroupV1, Pids: lifecycle.CgroupV1, Swap: true},
		id: wire.CommandIdentity{Executable: wire.Executable{Requested: "git", File: file("/usr/bin/git")}, Argv: []string{"status"},
			Cwd: wire.DirIdentity{Path: "."}, Workspace: wire.DirIdentity{Path: "/tmp/tmp.wUJfInsybo"}, Profile: wire.ProfileShort,
			Env: realisticEnv(cache), Policy: etcSplit(wire.Policy{ReadExec: []string{"/usr"}, ReadWrite: []string{cache}}),
			Binding: wire.InPlace, GitIdentity: git},
		says: []string{"command      git status", "executable   /usr/bin/git sha256 254087992540…, in place",
			`where        profile short, cwd "." in /tmp/tmp.wUJfInsybo`, `environment  LANG="C.UTF-8" UV_LINK_MODE="copy"`,
			"git identity Seed 03a4366b maintainers <maintainers@users.noreply.a-seed-03a4366b.example>",
			"may read /usr, /etc without its 11 secret(s)", "may write the workspace, a private HOME and TMPDIR, the workspace's cache",
			"cache kept for the workspace's next actions; 7 variables point into it", "no network",
			"protected read-only, new ones detected: hooks, .envrc, git/IDE/agent config",
			"limits 10s wall, 10 s CPU, 2 GiB memory, 256 processes (cgroup v1)",
			"broker approve ar-e0dd3dded5868f000623fd2d --state /tmp/sc [--uses N]",
			"broker deny ar-e0dd3dded5868f000623fd2d --state /tmp/sc [--reason R]", "broker approvals --full --state /tmp/sc"},
	}, {
		// A container: no user namespaces, no cgroups; a script under
		// pyenv in a deep workspace.
		name: "a script under pyenv in a container", by: wire.ProtectedByDetect, why: noUserNS, enf: lifecycle.Enforcement{Missing: noCgroup},
		id: wire.CommandIdentity{Executable: wire.Executable{Requested: "./tools/manage.py", File: file(ws + "/tools/manage.py"),
			Interpreter: &wire.Interpreter{File: file(pyenv + "/bin/python3.12"), Chain: []string{pyenv + "/bin/python3"}}},
			Argv: []string{"migrate", "--plan"}, Cwd: wire.DirIdentity{Path: "."}, Workspace: wire.DirIdentity{Path: ws},
			Profile: wire.ProfileShort, Env: realisticEnv(home, wire.EnvVar{Name: "PYENV_VERSION", Value: "3.12.1"}),
			Policy: etcSplit(wire.Policy{ReadExec: []string{"/usr", pyenv}, ReadWrite: []string{home}}), Binding: wire.InPlace,
			Toolchain: &wire.Toolchain{Kind: wire.ToolchainPyenv, Name: "3.12.1", Root: pyenv, Vars: []string{"PYENV_VERSION"}}, GitIdentity: git},
		says: []string{"executable the workspace's tools/manage.py sha256 254087992540…, in place",
			"interpreter the toolchain's bin/python3.12 sha256 254087992540…", "toolchain pyenv 3.12.1 at " + pyenv + ", read-only",
			`PYENV_VERSION="3.12.1"`, "may read /usr, the toolchain, /etc without its 11 secret(s)",
			"protected NOT read-only: hooks, .envrc, git/IDE/agent config",
			"limits 10s wall, 10 s CPU; memory and process count are NOT limited here: no writable memory or pids cgroup controller"},
	}, {
		name: "go test with declared variables, sealed, swap not bounded", state: "/tmp/sc", by: wire.ProtectedByMount,
		enf:     lifecycle.Enforcement{Memory: lifecycle.CgroupV2, Pids: lifecycle.CgroupV2},
		session: "claude-code 1f3a",
		id: wire.CommandIdentity{Executable: wire.Executable{Requested: "go", File: file("/usr/local/go/bin/go"), Chain: []string{"/usr/local/bin/go"}},
			Argv: []string{"test", "-run", "TestCardFits", "-count=1", "./broker/cli"}, Cwd: wire.DirIdentity{Path: "."},
			Workspace: wire.DirIdentity{Path: long}, Profile: wire.ProfileShort, Binding: wire.SealedSnapshot,
			Env: realisticEnv(cache, wire.EnvVar{Name: "GOFLAGS", Value: "-trimpath"}, wire.EnvVar{Name: "GOTELEMETRY", Value: "off"},
				wire.EnvVar{Name: "JAVA_HOME", Value: "/opt/jdk"}),
			Policy:    etcSplit(wire.Policy{ReadExec: []string{"/usr", "/usr/local/go"}, ReadWrite: []string{cache}}),
			Toolchain: &wire.Toolchain{Kind: wire.ToolchainGo, Name: "go1.26.0", Root: "/usr/local/go", Vars: []string{"GOROOT", "GOTOOLCHAIN"}}},
		says: []string{`session "claude-code 1f3a"`, "the toolchain's bin/go sha256 254087992540…, a sealed copy", "in " + long,
			`GOFLAGS="-trimpath"`, `JAVA_HOME="/opt/jdk"`,
			"limits 10s wall, 10 s CPU, 2 GiB memory (swap NOT bounded), 256 processes (cgroup v2)"},
	}}
}

// words is s with its runs of spaces and newlines made one space: a
// wrapped row and its continuation read as the line they were.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// card renders v as the command line would: state is --state ("" for
// the default directory).
func card(v *wire.ApprovalView, state string, full, debug bool) string {
	if state == "" {
		state = client.XDGStateDir()
	}
	var out bytes.Buffer
	e := &Env{State: state, full: full, Debug: debug}
	e.writeCard(&out, v)
	return out.String()
}

// fits fails t unless card has at most rows rows, none wider than 80
// columns.
func fits(t *testing.T, card string, rows int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(card, "\n"), "\n")
	if len(lines) > rows {
		t.Errorf("%d rows, want at most %d:\n%s", len(lines), rows, card)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a row of %d columns: %q", n, l)
		}
	}
}

// TestShortCardFits: the short card of an ordinary request, on hosts
// that differ (cgroup v1, a container with neither user namespaces nor
// cgroups, cgroup v2 without swap accounting) and for commands that
// bring their own rows (an interpreter, a toolchain, a git identity, a
// session, declared variables, a sealed copy), fits in 20 rows of 80
// columns, the blank row that ends it included, and says what each
// brings; the host's long account (its error chain, how to get the
// limits) is not on it but for --debug; --full holds the complete
// limitations text, a line a row, and every digit of the digests.
func TestShortCardFits(t *testing.T) {
	for _, c := range cardCases() {
		t.Run(c.name, func(t *testing.T) {
			v := c.view()
			short := card(v, c.state, false, false)
			t.Logf("\n%s", short)
			fits(t, short, 20)
			for _, want := range c.says {
				if !strings.Contains(words(short), words(want)) {
					t.Errorf("the card lacks %q:\n%s", want, short)
				}
			}
			for _, long := range []string{"operation not permitted", "systemd-run", "Landlock has no hook", "2540879925408799254087992540879925408799"} {
				if strings.Contains(words(short), long) {
					t.Errorf("the short card shows %q:\n%s", long, short)
				}
			}
			debug := words(card(v, c.state, false, true))
			if strings.Contains(debug, "systemd-run") != (c.enf.Missing != "") || strings.Contains(debug, "operation not permitted") != (c.why != "") {
				t.Errorf("--debug does not add exactly the host's account:\n%s", debug)
			}
			full := card(v, c.state, true, false)
			for line := range strings.SplitSeq(v.Limitations, "\n") {
				if !strings.Contains(full, " "+line+"\n") {
					t.Errorf("--full lacks the limitations line %q:\n%s", line, full)
				}
			}
			if !strings.Contains(full, strings.Repeat("25408799", 8)) {
				t.Errorf("--full lacks the whole digest:\n%s", full)
			}
		})
	}
}

// TestShortCardShowsWhatItCannotCondense: a limitations line the card
// does not know (another broker's) is on the short card whole.
func TestShortCardShowsWhatItCannotCondense(t *testing.T) {
	c := cardCases()[0]
	v := c.view()
	v.Limitations += "\nA new weakening: the action can reach the moon."
	if short := card(v, c.state, false, false); !strings.Contains(short, "limitation   A new weakening: the action can reach the moon.") {
		t.Errorf("the card hides a line it does not know:\n%s", short)
	}
}

// TestCardOfABrokerWithoutLimits: a broker whose executor sets no cgroup
// (as on a host without cgroups) makes a request whose short card says
// so in one row, "memory and process count are NOT limited here" with a
// short why, and leaves the broker's own account to --debug and --full.
func TestCardOfABrokerWithoutLimits(t *testing.T) {
	dir := t.TempDir()
	state, ws, tool := filepath.Join(dir, "state"), filepath.Join(dir, "ws"), filepath.Join(dir, "bin", "tool")
	raw, err := os.ReadFile("/bin/true")
	if err == nil {
		err = errors.Join(os.Mkdir(ws, 0o755), os.Mkdir(filepath.Dir(tool), 0o755), os.WriteFile(tool, raw, 0o755))
	}
	if err != nil {
		t.Fatal(err)
	}
	seam.InsecureSkipProbe = true // the executor starts nothing: there is nothing to probe
	b, err := broker.Open(context.Background(), broker.Config{StateDir: state, Executor: idle{}, Logf: t.Logf})
	seam.InsecureSkipProbe = false
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m, err := b.Submit(context.Background(), &wire.Submit{Workspace: ws,
		Request: wire.ActionRequest{Executable: tool, Argv: []string{"x"}, Cwd: ".", Profile: wire.ProfileShort}})
	if err != nil {
		t.Fatal(err)
	}
	ar, ok := m.(*wire.ApprovalRequired)
	if !ok {
		t.Fatalf("submit: %+v", m)
	}
	v := &ar.Request
	short := card(v, state, false, false)
	fits(t, short, 23) // the test's long temporary paths: the tool's, the workspace's and the state's take two rows each
	const line = "memory and process count are NOT limited here: no writable memory or pids cgroup controller"
	const account = "This broker's executor sets no cgroup."
	if !strings.Contains(words(short), line) || strings.Contains(short, account) {
		t.Errorf("the short card does not say it in one line:\n%s", short)
	}
	for _, flags := range []struct{ full, debug bool }{{true, false}, {false, true}} {
		if out := card(v, state, flags.full, flags.debug); !strings.Contains(words(out), account) {
			t.Errorf("%+v: the card lacks the broker's account:\n%s", flags, out)
		}
	}
}

// idle is an executor that starts nothing and sets no cgroup: the test
// only submits.
type idle struct{}

func (idle) Start(context.Context, *runner.Launch, runner.Observer) error {
	return errors.New("the test starts nothing")
}
func (idle) Cancel(string, string) wire.CancelResult { return wire.CancelRejected }

// unprintable is the first rune of s a terminal would not print as
// itself (a control, format or separator rune, or a byte of invalid
// UTF-8), or -1; a newline ends a row.
func unprintable(s string) rune {
	for _, r := range s {
		if r != '\n' && (r == utf8.RuneError || !unicode.IsPrint(r)) {
			return r
		}
	}
	return -1
}

// TestCardQuotesWhatTheRequestNames: every name the request brings (the
// workspace's path, a file in it, the links to it, the cwd, an argument,
// a value, the goal, the session, the toolchain, the git identity, a
// limitations line of another broker, the host's why) reaches neither
// card as is: an escape sequence that would erase the command's row and
// print another, one that hides the rest, and a right-to-left override
// are shown quoted, on the short card, with --debug and with --full.
func TestCardQuotesWhatTheRequestNames(t *testing.T) {
	const esc = "\x1b[1A\x1b[2K  command      go test ./...\x1b[8m"
	const rlo = "\u202e"
	ws := "/home/alice/w" + rlo + "skrow\x1b[8m"
	tc := "/opt/tc" + rlo
	cache := ws + "/.cache" + esc
	c := cardCase{by: wire.ProtectedByDetect, why: "no user namespace in " + ws, enf: lifecycle.Enforcement{Missing: "No cgroup is writable (" + ws + ")."},
		session: "s" + esc,
		id: wire.CommandIdentity{
			Executable: wire.Executable{Requested: "./x" + esc, File: file(ws + "/x" + esc), Chain: []string{ws + "/link" + rlo},
				Interpreter: &wire.Interpreter{File: file(tc + "/bin/sh" + esc), Chain: []string{tc + "/sh" + rlo}, Arg: "-e" + esc}},
			Argv: []string{"a" + esc, rlo + "gpj.exe", "\u2028x\u00ady"}, Cwd: wire.DirIdentity{Path: "sub" + esc + rlo},
			Workspace: wire.DirIdentity{Path: ws}, Profile: wire.ProfileShort, Binding: wire.InPlace,
			Env:         realisticEnv(cache, wire.EnvVar{Name: "GOFLAGS", Value: "-x" + esc + rlo}),
			Policy:      wire.Policy{ReadExec: []string{"/usr", tc, ws + "/bin" + esc}, ReadWrite: []string{cache, "/srv/" + rlo}, Devices: []string{"/dev/null"}},
			Toolchain:   &wire.Toolchain{Kind: wire.ToolchainPyenv, Name: "3" + esc, Root: tc, Vars: []string{"PYENV" + rlo}},
			GitIdentity: &wire.GitIdentity{Name: "n" + esc, Email: "e" + rlo},
		}}
	v := c.view()
	v.Goal = "g" + esc
	v.Limitations += "\nA line of another broker's: " + ws + "."
	for _, flags := range []struct{ full, debug bool }{{false, false}, {false, true}, {true, false}} {
		out := card(v, "", flags.full, flags.debug)
		if r := unprintable(out); r >= 0 {
			t.Errorf("%+v: %U reaches the terminal as is:\n%s", flags, r, strconv.Quote(out))
		}
		for _, shown := range []string{`\x1b[1A`, `\u202e`} {
			if !strings.Contains(out, shown) {
				t.Errorf("%+v: the card does not show %s quoted:\n%s", flags, shown, out)
			}
		}
		if n := strings.Count(out, "\n  command "); n != 1 {
			t.Errorf("%+v: %d command rows:\n%s", flags, n, out)
		}
	}
}

// TestShortCardMarksACutWord: on the short card a word too long for a
// row is cut with ↩ at the end of each row it continues from, so that it
// never reads as two arguments; two arguments whose second goes on the
// next row stay unmarked.
func TestShortCardMarksACutWord(t *testing.T) {
	c := cardCases()[0]
	rowsOf := func(argv ...string) []string {
		c.id.Executable.Requested, c.id.Argv = "rm", argv
		short := card(c.view(), c.state, false, false)
		fits(t, short, 20)
		return strings.Split(short, "\n")
	}
	// rm -rf ./a…a /: the path has a row of its own, the / the next one.
	path := "./" + strings.Repeat("a", 74)
	rows := rowsOf("-rf", path, "/")
	i := slices.Index(rows, "    "+path)
	if i < 0 || rows[i+1] != strings.Repeat(" ", 15)+"/" || strings.Contains(strings.Join(rows, "\n"), "↩") {
		t.Errorf("two arguments do not read as two:\n%s", strings.Join(rows, "\n"))
	}
	// rm -rf ./b…b: cut, each row it continues from marked.
	path = "./" + strings.Repeat("b", 150)
	rows = rowsOf("-rf", path)
	var joined string
	for j, row := range rows {
		if !strings.Contains(row, "bbb") {
			continue
		}
		row = strings.TrimSpace(row)
		more := strings.Contains(rows[j+1], "bbb")
		if strings.HasSuffix(row, "↩") != more {
			t.Errorf("row %q: marked %v, continued %v", row, !more, more)
		}
		joined += strings.TrimSuffix(row, "↩")
	}
	if joined != path {
		t.Errorf("the cut word reads %q, want %q", joined, path)
	}
}

// TestRowsCountWideRunesAsTwoColumns: a row of wide runes (CJK) holds
// half as many, so that it fits the terminal's columns.
func TestRowsCountWideRunesAsTwoColumns(t *testing.T) {
	word := strings.Repeat("漢", 100)
	rs := breakRows("", "", word, 80, true)
	for _, row := range rs {
		if n := 2 * strings.Count(row, "漢"); n+utf8.RuneCountInString(strings.ReplaceAll(row, "漢", "")) > 80 {
			t.Errorf("a row of %d columns: %q", n, row)
		}
	}
	if got := strings.ReplaceAll(strings.Join(rs, ""), "↩", ""); got != word {
		t.Errorf("the rows read %q, want %q", got, word)
	}
	if cols("a漢b") != 4 || cols("é") != 1 {
		t.Errorf("cols(a漢b) = %d, cols(é) = %d; want 4 and 1", cols("a漢b"), cols("é"))
	}
}

// TestCardShowsEgress: a request with an egress grant has a network
// section on its card — the exact entries, a literal local address
// marked so, and what the proxy cannot promise, four rows here, so the
// short card of this one (with a git identity of two rows) takes 22 —
// and --full lists each entry on a row of its own and offers approve's
// --egress. A request without egress has none of it.
func TestCardShowsEgress(t *testing.T) {
	c := cardCases()[0]
	plain := card(c.view(), c.state, false, false)
	for _, absent := range []string{"May connect", "--egress", "proxy"} {
		if strings.Contains(plain, absent) {
			t.Errorf("a card without egress says %q:\n%s", absent, plain)
		}
	}
	c.id.Executable.Requested, c.id.Argv = "npm", []string{"ci"}
	c.id.Egress = []string{"127.0.0.1:4873", "registry.npmjs.org:443"}
	v := c.view()
	short := card(v, c.state, false, false)
	t.Logf("\n%s", short)
	fits(t, short, 22)
	for _, want := range []string{
		"network      May connect to: 127.0.0.1:4873 (a local address), registry.npmjs.org:443",
		"through the broker's proxy, which sees destinations, not contents: an allowed host can receive whatever the program sends it",
	} {
		if !strings.Contains(words(short), words(want)) {
			t.Errorf("the card lacks %q:\n%s", want, short)
		}
	}
	if strings.Contains(short, "no network") {
		t.Errorf("a card with egress says no network:\n%s", short)
	}
	full := card(v, c.state, true, false)
	for _, row := range []string{"  network      May connect to:\n", "               127.0.0.1:4873 (a local address)\n",
		"               registry.npmjs.org:443\n"} {
		if !strings.Contains(full, row) {
			t.Errorf("--full lacks the row %q:\n%s", row, full)
		}
	}
	if !strings.Contains(words(full), "[--binding B] [--egress HOST:PORT,…|none]") {
		t.Errorf("--full does not offer --egress:\n%s", full)
	}
	if !strings.Contains(full, "Network: only TCP connections to the 2 host:port entries of its egress grant, through the broker's proxy") {
		t.Errorf("--full lacks the limitations line on the network:\n%s", full)
	}
}
