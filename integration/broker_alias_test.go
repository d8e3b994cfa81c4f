//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// hostFile is what a write through an alias could change, read on the
// host.
type hostFile struct {
	bytes          string
	mode, uid, gid uint32
	nlink          uint64
	mtime, ctime   unix.Timespec
}

func hostFacts(t *testing.T, p string) hostFile {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return hostFile{bytes: string(b), mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: uint64(st.Nlink), mtime: st.Mtim, ctime: st.Ctim}
}

// aliasAttack would append to the planted name and leave a marker, were
// it ever run.
const aliasAttack = "echo pwned >> planted; echo ran > marker"

// requireAliasRefusal requires `broker run --json`'s refusal: exit 125,
// WORKSPACE_ALIASED naming the planted link and the count, no handle.
func requireAliasRefusal(t *testing.T, j *runJSON, code int) {
	t.Helper()
	if code != 125 || j.Error == nil || j.Error.Code != wire.CodeWorkspaceAliased.String() || j.Handle != nil {
		t.Fatalf("broker run in an aliased workspace: exit %d, handle %v, error %+v; want 125 and WORKSPACE_ALIASED", code, j.Handle, j.Error)
	}
	if !strings.Contains(j.Error.Message, `1 file in the workspace is a hard link`) || !strings.Contains(j.Error.Message, `"planted"`) {
		t.Fatalf("the refusal does not name the planted link and the count: %q", j.Error.Message)
	}
}

// TestBrokerAliasedWorkspaceRefused: a hard link planted in the
// workspace to a file outside it makes `broker run` refuse with
// WORKSPACE_ALIASED before anything is asked or consumed; the file
// outside keeps its bytes and metadata and the command never ran. Two
// names of one file inside the workspace do not count against it.
func TestBrokerAliasedWorkspaceRefused(t *testing.T) {
	d := startBroker(t, "") // its own journal: nothing may be asked
	a := d.newAgent(t)
	victim := filepath.Join(filepath.Dir(a.WS), "victim")
	if err := os.WriteFile(victim, []byte("the victim's bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustLink(t, victim, filepath.Join(a.WS, "planted"))
	inside := filepath.Join(a.WS, "obj", "a")
	if err := os.MkdirAll(filepath.Dir(inside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustLink(t, inside, filepath.Join(a.WS, "obj", "b"))
	before := hostFacts(t, victim)

	_, j, code := a.run(wire.ProfileShort, "sh", "-c", aliasAttack)
	requireAliasRefusal(t, j, code)
	if after := hostFacts(t, victim); after != before {
		t.Fatalf("the file outside changed: %+v -> %+v", before, after)
	}
	if _, err := os.Lstat(filepath.Join(a.WS, "marker")); !os.IsNotExist(err) {
		t.Fatalf("the command ran: marker %v", err)
	}
	for _, what := range []string{"approvals", "leases", "actions"} {
		if out, code := d.CLI(what, "--json"); code != 0 || len(wholeListing[json.RawMessage](t, what, out)) != 0 {
			t.Fatalf("broker %s after the refusal: exit %d\n%s", what, code, out)
		}
	}
}

// TestBrokerAliasedWorkspaceRefusedAsUser: the same for an ordinary
// user's broker (uid 65534), with the link planted to its ~/.bashrc.
func TestBrokerAliasedWorkspaceRefusedAsUser(t *testing.T) {
	u := asNobody(t)
	rc := filepath.Join(u.home, ".bashrc")
	if err := os.WriteFile(rc, []byte("alias ls='ls -l'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustLink(t, rc, filepath.Join(u.ws, "planted"))
	u.chownHome()
	before := hostFacts(t, rc)
	j, code := u.runStatus("sh", "-c", aliasAttack)
	requireAliasRefusal(t, &j, code)
	if after := hostFacts(t, rc); after != before {
		t.Fatalf("~/.bashrc changed: %+v -> %+v", before, after)
	}
	if _, err := os.Lstat(filepath.Join(u.ws, "marker")); !os.IsNotExist(err) {
		t.Fatalf("the command ran: marker %v", err)
	}
}

// runStatus is run, with `broker run`'s exit status.
func (u *userBroker) runStatus(argv ...string) (runJSON, int) {
	u.t.Helper()
	cmd := u.command(filepath.Join(u.bin, "broker"), append([]string{"run", "--approve", "--json", "--workspace", u.ws, "--"}, argv...)...)
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		u.t.Fatal(err)
	}
	var res runJSON
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		u.t.Fatalf("broker run as uid %d: %v %v\n%s", nobody, err, jerr, out)
	}
	return res, cmd.ProcessState.ExitCode()
}

func mustLink(t *testing.T, oldname, newname string) {
	t.Helper()
	if err := os.Link(oldname, newname); err != nil {
		t.Fatal(err)
	}
}

// cloneInWorkspace makes a repository with one commit in ws/src and a
// local clone of it in ws/clone, and requires the clone to hard-link
// objects (else the test would prove nothing). It returns the subject.
func cloneInWorkspace(t *testing.T, ws string) string {
	t.Helper()
	gitPath := lookPath(t, "git")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gitPath, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	const subject = "the first commit"
	git("init", "-q", "src")
	if err := os.WriteFile(filepath.Join(ws, "src", "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("-C", "src", "add", "README")
	git("-C", "src", "commit", "-q", "-m", subject)
	git("clone", "-q", "src", "clone")
	linked := 0
	filepath.Walk(filepath.Join(ws, "clone", ".git", "objects"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Sys().(*syscall.Stat_t).Nlink > 1 {
			linked++
		}
		return nil
	})
	if linked == 0 {
		t.Fatal("the local clone hard-linked no object")
	}
	return subject
}

// TestBrokerGitCloneInWorkspaceRuns: a local clone inside the workspace,
// whose objects are hard links to the repository beside it, is no alias:
// `git -C clone log` runs through `broker run` and reads the commit.
func TestBrokerGitCloneInWorkspaceRuns(t *testing.T) {
	a := shared(t).newAgent(t)
	subject := cloneInWorkspace(t, a.WS)
	_, j, code := a.run(wire.ProfileShort, "git", "-C", "clone", "log", "--format=%s")
	if code != 0 || j.Outcome != "exited" || strings.TrimSpace(j.Stdout.Text) != subject {
		t.Fatalf("git log in the clone: exit %d, outcome %s, error %+v\nstdout %q\nstderr %q", code, j.Outcome, j.Error, j.Stdout.Text, j.Stderr.Text)
	}
}

// TestBrokerGitCloneInWorkspaceRunsAsUser: the same for uid 65534.
func TestBrokerGitCloneInWorkspaceRunsAsUser(t *testing.T) {
	u := asNobody(t)
	subject := cloneInWorkspace(t, u.ws)
	u.chownHome()
	j, code := u.runStatus("git", "-C", "clone", "log", "--format=%s")
	if code != 0 || j.Outcome != "exited" || strings.TrimSpace(j.Stdout.Text) != subject {
		t.Fatalf("git log in the clone as uid %d: exit %d, outcome %s, error %+v\nstdout %q\nstderr %q", nobody, code, j.Outcome, j.Error, j.Stdout.Text, j.Stderr.Text)
	}
}

// TestBrokerOverLimitWorkspaceRefused: a workspace over the alias scan's
// real bound (250,000 entries; no test knob reaches the binary) is
// refused with WORKSPACE_ALIASED and the limit in the sentence, and the
// command never runs. Building the tree takes a few seconds.
func TestBrokerOverLimitWorkspaceRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: -short; the tree has 250,250 entries")
	}
	a := shared(t).newAgent(t)
	const dirs, files = 250, 1000
	var wg sync.WaitGroup
	errs := make(chan error, dirs)
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < dirs; i += 2 {
				dir := filepath.Join(a.WS, fmt.Sprintf("d%03d", i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					errs <- err
					return
				}
				// One file and 999 more names of it: names are what the
				// bound counts, and a link is cheaper to make than a file.
				first := filepath.Join(dir, "f0000")
				if err := os.WriteFile(first, nil, 0o644); err != nil {
					errs <- err
					return
				}
				for k := 1; k < files; k++ {
					if err := os.Link(first, filepath.Join(dir, fmt.Sprintf("f%04d", k))); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_, j, code := a.run(wire.ProfileShort, "sh", "-c", "echo ran > marker")
	if code != 125 || j.Error == nil || j.Error.Code != wire.CodeWorkspaceAliased.String() || j.Handle != nil {
		t.Fatalf("broker run in an over-limit workspace: exit %d, handle %v, error %+v; want 125 and WORKSPACE_ALIASED", code, j.Handle, j.Error)
	}
	// Which bound is met first depends on the host's speed; both are the
	// scan's limits and either must be named.
	m := j.Error.Message
	if !strings.Contains(m, "more than 250,000 entries (the alias scan's limit)") &&
		!strings.Contains(m, "did not finish within 5s (the alias scan's limit)") {
		t.Fatalf("the refusal does not name the limit: %q", m)
	}
	t.Logf("refused: %s", m)
	if _, err := os.Lstat(filepath.Join(a.WS, "marker")); !os.IsNotExist(err) {
		t.Fatalf("the command ran: marker %v", err)
	}
}

// TestBrokerTargetCannotHardLinkIntoWorkspace: a target cannot make a
// file outside the writable scope a second name inside it (Landlock's
// REFER right is handled): `ln` of a file it may read (beside the
// executable, granted read+execute) and of one it may not, each on the
// workspace's own mount, fails with EXDEV, and each file keeps its bytes
// and link count. Without the sandbox the same links succeed.
func TestBrokerTargetCannotHardLinkIntoWorkspace(t *testing.T) {
	a := shared(t).newAgent(t)
	base := filepath.Dir(a.WS)
	tools, hidden := filepath.Join(base, "tools"), filepath.Join(base, "hidden")
	for _, dir := range []string{tools, hidden} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := filepath.Join(tools, "ln")
	copyExecutable(t, lookPath(t, "ln"), ln) // its directory is granted read+execute
	sources := []string{filepath.Join(tools, "readable"), filepath.Join(hidden, "secret")}
	before := map[string]hostFile{}
	for _, src := range sources {
		if err := os.WriteFile(src, []byte("bytes of "+filepath.Base(src)), 0o644); err != nil {
			t.Fatal(err)
		}
		probe := filepath.Join(a.WS, "probe")
		mustLink(t, src, probe) // same mount: only the sandbox can stop it
		if err := os.Remove(probe); err != nil {
			t.Fatal(err)
		}
		before[src] = hostFacts(t, src)
	}
	for i, src := range sources {
		name := fmt.Sprintf("x%d", i)
		_, j, code := a.run(wire.ProfileShort, ln, src, name)
		if j.Outcome != "exited" || code == 0 || !strings.Contains(j.Stderr.Text, "Invalid cross-device link") {
			t.Errorf("ln %s %s as the target: exit %d, outcome %s, error %+v, stderr %q; want EXDEV", src, name, code, j.Outcome, j.Error, j.Stderr.Text)
		}
		if _, err := os.Lstat(filepath.Join(a.WS, name)); !os.IsNotExist(err) {
			t.Errorf("%s was created in the workspace: %v", name, err)
		}
	}
	for _, src := range sources {
		if after := hostFacts(t, src); after != before[src] || after.nlink != 1 {
			t.Errorf("%s changed: %+v -> %+v", src, before[src], after)
		}
	}
}
