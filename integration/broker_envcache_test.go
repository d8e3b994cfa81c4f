//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/wire"
)

// serveWith starts `broker serve --state state flags...` with the
// launcher and extra in its own environment, and waits until it answers.
func serveWith(t *testing.T, state string, extra []string, flags ...string) *brokerd {
	t.Helper()
	d, err := spawnDaemon(state, extra, flags...)
	if err != nil {
		t.Fatal(err)
	}
	d.t = t
	t.Cleanup(d.kill)
	d.dial()
	return d
}

// serveRefused runs `broker serve` on state with flags and requires that
// it stops at once with an error holding want.
func serveRefused(t *testing.T, state string, want string, flags ...string) {
	t.Helper()
	cmd := exec.Command(bins.broker, append([]string{"serve", "--state", state}, flags...)...)
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(daemonSafety):
		cmd.Process.Kill()
		<-done
		t.Fatalf("broker serve %q started; want it refused", flags)
	}
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("broker serve %q: %v, want a refusal saying %q:\n%s", flags, err, want, out)
	}
}

// envLines are the NAME=VALUE lines a target printed with /usr/bin/env.
func envLines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if n, v, ok := strings.Cut(l, "="); ok {
			m[n] = v
		}
	}
	return m
}

// TestBrokerDeclaredEnvironment: variables the operator declares — in
// <state>/env and with --env, which takes the place of the file's value —
// reach the target, with their values on the approval card and their
// names (only) in the receipt; the broker's own environment, canaries
// and a GOROOT among them, never does. Secret-looking and malformed
// declarations stop `broker serve` with a sentence naming them, and
// `broker run --env` against a daemon is a usage error, not ignored.
func TestBrokerDeclaredEnvironment(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	file := "# the operator's toolchains\nGOFLAGS=-trimpath\n\nJAVA_HOME=/from/the/file\n"
	if err := os.WriteFile(filepath.Join(state, "env"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	d := serveWith(t, state, []string{"OPENAI_API_KEY=" + brokerCanary, "WARRANT_CANARY=" + brokerCanary, "GOROOT=/inherited"},
		"--env", "JAVA_HOME=/opt/jdk", "--env", "GOTELEMETRY=off")
	a := d.newAgent(t)
	s, err := a.cl.Submit(a.WS, a.request(wire.ProfileShort, "/usr/bin/env"))
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v, %v", s, err)
	}
	// The short card shows every declared value and counts the cache's
	// variables; --full shows their values and the cache line too.
	card, code := d.CLI("approvals")
	for _, want := range []string{`JAVA_HOME="/opt/jdk"`, `GOFLAGS="-trimpath"`, `GOTELEMETRY="off"`,
		"cache        kept for the workspace's next actions; 7 variables point into it"} {
		if code != 0 || !strings.Contains(card, want) {
			t.Errorf("the approval card lacks %s:\n%s", want, card)
		}
	}
	full, code := d.CLI("approvals", "--full")
	for _, want := range []string{`JAVA_HOME="/opt/jdk"`, `GOCACHE="`, "(kept after the action, shared by every action of this workspace)",
		"Persistent cache: "} {
		if code != 0 || !strings.Contains(full, want) {
			t.Errorf("the --full approval card lacks %s:\n%s", want, full)
		}
	}
	out, code := d.CLI("run", "--approve", "--json", "--workspace", a.WS, "--", "/usr/bin/env")
	j := wantRun(t, out, code)
	env := envLines(j.Stdout.Text)
	for n, v := range map[string]string{"JAVA_HOME": "/opt/jdk", "GOFLAGS": "-trimpath", "GOTELEMETRY": "off"} {
		if env[n] != v {
			t.Errorf("the target's %s=%q, want %q", n, env[n], v)
		}
	}
	if strings.Contains(j.Stdout.Text, brokerCanary) || env["GOROOT"] != "" {
		t.Errorf("the broker's own environment reached the target:\n%s", j.Stdout.Text)
	}
	rc := d.Receipt(*j.ReceiptID)
	for _, n := range []string{"JAVA_HOME", "GOFLAGS", "GOTELEMETRY", "GOCACHE"} {
		if !slices.Contains(rc.Identity.EnvNames, n) {
			t.Errorf("the receipt's envNames %q lack %s", rc.Identity.EnvNames, n)
		}
	}
	if shown, _ := d.CLI("receipts", "show", *j.ReceiptID, "--json"); strings.Contains(shown, "/opt/jdk") {
		t.Error("the receipt holds a declared value; it keeps names only")
	}
	if out, code := d.CLI("run", "--approve", "--json", "--workspace", a.WS, "--env", "X=1", "--", "/bin/true"); code != 125 ||
		!strings.Contains(out, `"code": "ARGUMENTS_INVALID"`) || !strings.Contains(out, "configure the embedded broker") {
		t.Errorf("broker run --env against a daemon: exit %d, want 125 (a usage error of run) with the sentence in its JSON:\n%s", code, out)
	}

	serveRefused(t, filepath.Join(t.TempDir(), "s"), "GITHUB_TOKEN is refused: it looks like a credential", "--env", "GITHUB_TOKEN=x")
	serveRefused(t, filepath.Join(t.TempDir(), "s"), "AWS_PROFILE is refused", "--env", "AWS_PROFILE=dev")
	serveRefused(t, filepath.Join(t.TempDir(), "s"), "LD_PRELOAD is refused", "--env", "LD_PRELOAD=/x.so")
	serveRefused(t, filepath.Join(t.TempDir(), "s"), "GOCACHE is set by the workspace cache", "--env", "GOCACHE=/tmp")
	bad := filepath.Join(t.TempDir(), "s")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "env"), []byte("GOROOT=/usr/local/go\nexport PATH=/tmp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serveRefused(t, bad, "env line 2: \"export PATH\" is not a variable name")
}

// cacheRun runs sh -c script in the agent's workspace through `broker
// run` and returns the object and exit status.
func cacheRun(t *testing.T, a *agent, script string) (*runJSON, int) {
	t.Helper()
	_, j, code := a.run(wire.ProfileShort, "/bin/sh", "-c", script)
	return j, code
}

// TestBrokerWorkspaceCache, as root against `broker serve`: what one
// action writes into $GOCACHE (and chmods there) the next action of the
// same workspace reads; another workspace has another cache and cannot
// reach the first one; `broker caches list` shows both with their
// workspaces; `broker caches prune` refuses while the broker runs and
// removes them once it is stopped, and the next action starts anew.
func TestBrokerWorkspaceCache(t *testing.T) {
	d := startBroker(t, "")
	a, b := d.newAgent(t), d.newAgent(t)
	j, code := cacheRun(t, a, `echo built > "$GOCACHE/entry" && chmod 0640 "$GOCACHE/entry" && printf %s "$GOCACHE"`)
	if code != 0 {
		t.Fatalf("writing the cache: exit %d %+v", code, j.Error)
	}
	gocache := j.Stdout.Text
	if !strings.HasPrefix(gocache, filepath.Join(d.State, "caches")+"/") {
		t.Fatalf("GOCACHE=%q is not under %s/caches", gocache, d.State)
	}
	fi, err := os.Stat(filepath.Join(gocache, "entry"))
	if err != nil || fi.Mode().Perm() != 0o640 || readHost(t, filepath.Join(gocache, "entry")) != "built\n" {
		t.Fatalf("host: the cache entry: %v %v", fi, err)
	}
	if j, code = cacheRun(t, a, `cat "$GOCACHE/entry"`); code != 0 || j.Stdout.Text != "built\n" {
		t.Fatalf("the second action of the workspace does not see the cache: exit %d %q", code, j.Stdout.Text)
	}
	j, code = cacheRun(t, b, `printf '%s\n' "$GOCACHE"; cat "$GOCACHE/entry"`)
	if code == 0 || strings.TrimSpace(j.Stdout.Text) == gocache {
		t.Fatalf("another workspace shares the cache: exit %d, %q", code, j.Stdout.Text)
	}
	if j, code = cacheRun(t, b, "cat "+gocache+"/entry"); code == 0 || strings.Contains(j.Stdout.Text, "built") {
		t.Fatalf("another workspace read the first one's cache: exit %d %q", code, j.Stdout.Text)
	}

	out, code := d.CLI("caches", "list", "--json")
	list := wholeListing[struct {
		Workspace string `json:"workspace"`
		Dir       string `json:"dir"`
		Bytes     int64  `json:"bytes"`
	}](t, "caches list", out)
	if code != 0 || len(list) != 2 {
		t.Fatalf("broker caches list: exit %d\n%s", code, out)
	}
	byWS := map[string]int64{}
	for _, c := range list {
		byWS[c.Workspace] = c.Bytes
	}
	if byWS[a.WS] < int64(len("built\n")) || len(byWS) != 2 {
		t.Fatalf("broker caches list: %+v", list)
	}
	if out, code := d.CLI("caches", "prune", "--all"); code != 1 {
		t.Fatalf("prune beside a running broker: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(gocache); err != nil {
		t.Fatalf("the refused prune removed a cache: %v", err)
	}
	d.kill()
	if out, code := d.CLI("caches", "prune", "--older-than", "1h"); code != 0 || !strings.Contains(out, "nothing removed") {
		t.Fatalf("prune --older-than 1h of caches used just now: exit %d\n%s", code, out)
	}
	if out, code := d.CLI("caches", "prune", "--all"); code != 0 || !strings.Contains(out, "Removed 2 cache(s)") {
		t.Fatalf("prune --all: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(gocache); !os.IsNotExist(err) {
		t.Fatalf("the pruned cache is still there: %v", err)
	}
	if out, _ := d.CLI("caches", "list"); !strings.Contains(out, "No workspace caches.") {
		t.Fatalf("broker caches list after prune --all:\n%s", out)
	}
	d = startBroker(t, d.State)
	a.d, a.cl = d, d.dial()
	if j, code = cacheRun(t, a, `cat "$GOCACHE/entry"`); code == 0 {
		t.Fatalf("a pruned cache came back: %q", j.Stdout.Text)
	}
}

// TestBrokerWorkspaceCacheAsUser, as uid 65534 with the embedded broker
// of `broker run`: the cache is reused across its actions and owned by
// that uid; a read-only module-cache tree a target leaves in it (as Go's
// is) is pruned by `broker caches prune`; --env reaches the embedded
// broker's targets.
func TestBrokerWorkspaceCacheAsUser(t *testing.T) {
	u := asNobody(t)
	res := u.run("/bin/sh", "-c", `echo built > "$GOCACHE/entry" && mkdir -p "$GOMODCACHE/m@v1" && echo m > "$GOMODCACHE/m@v1/go.mod" `+
		`&& chmod 444 "$GOMODCACHE/m@v1/go.mod" && chmod 555 "$GOMODCACHE/m@v1" "$GOMODCACHE" && printf %s "$GOCACHE"`)
	if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("writing the cache as uid %d: %s %v %+v", nobody, res.Outcome, res.ExitCode, res.Error)
	}
	gocache := res.Stdout.Text
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(gocache), &st); err != nil || st.Uid != nobody || st.Mode&0o777 != 0o700 {
		t.Fatalf("host: the cache %s: uid %d mode %o, %v", filepath.Dir(gocache), st.Uid, st.Mode&0o777, err)
	}
	if res = u.run("/bin/sh", "-c", `cat "$GOCACHE/entry"`); res.Stdout.Text != "built\n" {
		t.Fatalf("the second action does not see the cache: %+v", res)
	}
	out, code := u.cli("run", "--approve", "--json", "--workspace", u.ws, "--env", "GOTELEMETRY=off", "--", "/usr/bin/env")
	var j runJSON
	if err := json.Unmarshal(out, &j); err != nil || code != 0 || envLines(j.Stdout.Text)["GOTELEMETRY"] != "off" {
		t.Fatalf("broker run --env as uid %d: exit %d %v\n%s", nobody, code, err, out)
	}
	if out, code := u.cli("caches", "list"); code != 0 || !strings.Contains(string(out), `workspace "`+u.ws+`"`) {
		t.Fatalf("broker caches list as uid %d: exit %d\n%s", nobody, code, out)
	}
	if out, code := u.cli("caches", "prune", "--all"); code != 0 || !strings.Contains(string(out), "Removed 1 cache(s)") {
		t.Fatalf("broker caches prune --all as uid %d: exit %d\n%s", nobody, code, out)
	}
	if _, err := os.Lstat(filepath.Dir(gocache)); !os.IsNotExist(err) {
		t.Fatalf("the pruned cache is still there: %v", err)
	}
}
