//go:build linux

package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker/client"
)

// The broker's authority — the state directory with its journal and
// keys, the sockets, its binaries — lies outside every workspace, and so
// does the host's: each test asks `broker run` for the workspace or
// executable an attacker would, checks the refusal (exit 125,
// PATH_INVALID, a sentence naming the overlap), that the command never
// ran, and that the journal and keys are byte for byte and in their
// metadata what they were.

// fileFacts are a file's bytes and metadata.
type fileFacts struct {
	Mode            uint32
	UID, GID        uint32
	Size            int64
	Mtime, Ctime    syscall.Timespec
	SHA256          [32]byte
	Nlink, Ino, Dev uint64
}

// authorityFacts measures journal.db, its WAL when there is one, and
// every file in keys/.
func authorityFacts(t *testing.T, state string) map[string]fileFacts {
	t.Helper()
	keys, err := filepath.Glob(filepath.Join(state, "keys", "*"))
	if err != nil || len(keys) == 0 {
		t.Fatalf("no keys in %s: %v", state, err)
	}
	facts := map[string]fileFacts{}
	for _, p := range append(keys, filepath.Join(state, "journal.db"), filepath.Join(state, "journal.db-wal")) {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(p, "-wal") {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		facts[p] = fileFacts{Mode: st.Mode, UID: st.Uid, GID: st.Gid, Size: st.Size, Mtime: st.Mtim, Ctime: st.Ctim,
			SHA256: sha256.Sum256(b), Nlink: st.Nlink, Ino: st.Ino, Dev: st.Dev}
	}
	return facts
}

func wantFactsUnchanged(t *testing.T, before, after map[string]fileFacts) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("the state directory's files changed: %d before, %d after", len(before), len(after))
	}
	for p, b := range before {
		if a, ok := after[p]; !ok || a != b {
			t.Errorf("%s changed:\nbefore %+v\nafter  %+v", p, b, a)
		}
	}
}

// wantRefusedRun checks that `broker run --json` printed a PATH_INVALID
// refusal holding every piece of want and exited 125.
func wantRefusedRun(t *testing.T, out []byte, code int, want ...string) {
	t.Helper()
	var j runJSON
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("broker run --json printed no object: %v\n%s", err, out)
	}
	if code != 125 || j.Error == nil || j.Error.Code != "PATH_INVALID" || j.Handle != nil {
		t.Fatalf("want exit 125 with PATH_INVALID and no action, got exit %d: %s", code, out)
	}
	for _, w := range want {
		if !strings.Contains(j.Error.Message, w) {
			t.Errorf("the refusal %q does not say %q", j.Error.Message, w)
		}
	}
}

func wantAbsent(t *testing.T, marker string) {
	t.Helper()
	if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused command ran: %s exists (%v)", marker, err)
	}
}

// markerScript writes a #! script at p that would copy the signing key
// into marker and append to the journal.
func markerScript(t *testing.T, p, state, marker string) {
	t.Helper()
	script := "#!/bin/sh\ncat " + state + "/keys/* > " + marker + "\necho x >> " + state + "/journal.db\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestBrokerAuthorityOutsideWorkspaces, as root against a `broker serve`:
// a workspace above the state directory (the reproduced attack: read the
// signing key, write the journal) and a program whose directory is above
// the state directory are refused, nothing runs, and the journal and keys
// are unchanged; a workspace of / is refused.
func TestBrokerAuthorityOutsideWorkspaces(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	d := startBroker(t, state)
	before := authorityFacts(t, state)
	marker := filepath.Join(dir, "ran")
	attack := "cat state/keys/* > ran; echo x >> state/journal.db"

	out, code := d.CLI("run", "--approve", "--json", "--workspace", dir, "--", "/bin/sh", "-c", attack)
	wantRefusedRun(t, []byte(out), code, "the workspace "+dir+" contains the broker's state directory "+state)
	wantAbsent(t, marker)

	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(dir, "tool")
	markerScript(t, tool, state, marker)
	out, code = d.CLI("run", "--approve", "--json", "--workspace", ws, "--", tool)
	wantRefusedRun(t, []byte(out), code, "the executable "+tool+" is in "+dir+", above the broker's state directory",
		"broker serve --read-path DIR")
	wantAbsent(t, marker)

	rootMarker := filepath.Join(t.TempDir(), "ran")
	out, code = d.CLI("run", "--approve", "--json", "--workspace", "/", "--", "/bin/sh", "-c", "echo x > "+rootMarker)
	wantRefusedRun(t, []byte(out), code, "the workspace / is the filesystem root")
	wantAbsent(t, rootMarker)

	wantFactsUnchanged(t, before, authorityFacts(t, state))
	if pending := pendingApprovals(t, d); len(pending) != 0 {
		t.Errorf("a refused submit raised approval requests %v", pending)
	}
}

// TestBrokerAuthorityOrdinaryUser, as uid 65534 against its own
// `broker serve`, with the state in its home directory (the default
// layout): the home directory as workspace, and a program placed directly
// in the home directory, are refused, nothing runs, and the journal and
// keys are unchanged; a workspace inside the home directory runs.
func TestBrokerAuthorityOrdinaryUser(t *testing.T) {
	u := asNobody(t)
	state := filepath.Join(u.home, "state")
	tool, marker := filepath.Join(u.home, "tool"), filepath.Join(u.ws, "ran")
	markerScript(t, tool, state, marker)
	u.chownHome()
	env := []string{"WARRANT_STATE=" + state, "PATH=/usr/bin:/bin", "HOME=" + u.home}
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}

	// A daemon, so that no broker opens the state directory between the
	// measurements: only the refused submits happen in between.
	serve := exec.Command(filepath.Join(u.bin, "broker"), "serve")
	serve.Env, serve.SysProcAttr = env, cred
	var serveLog syncBuffer
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	if err := startDaemon(serve); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { serve.Wait(); close(done) }()
	t.Cleanup(func() { serve.Process.Signal(syscall.SIGKILL); <-done })
	for i := 0; ; i++ {
		cl, err := client.Dial(state)
		if err == nil {
			cl.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("broker serve as uid %d exited: %v\n%s", nobody, serve.ProcessState, serveLog.String())
		case <-time.After(5 * time.Millisecond):
		}
		if i == dialAttempts {
			t.Fatalf("broker serve as uid %d never answered: %v\n%s", nobody, err, serveLog.String())
		}
	}

	run := func(args ...string) ([]byte, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(u.bin, "broker"), append([]string{"run", "--approve", "--json"}, args...)...)
		cmd.Dir, cmd.Env, cmd.SysProcAttr = u.ws, env, cred
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if stderr.Len() > 0 {
			t.Logf("broker run: stderr:\n%s", stderr.String())
		}
		return out, cmd.ProcessState.ExitCode()
	}
	if out, code := run("--workspace", u.ws, "--", "/usr/bin/true"); code != 0 {
		t.Fatalf("a workspace inside the home directory: exit %d\n%s", code, out)
	}
	before := authorityFacts(t, state)

	out, code := run("--workspace", u.home, "--", "/bin/sh", "-c", "cat state/keys/* > ws/ran")
	wantRefusedRun(t, out, code, "the workspace "+u.home+" is the home directory "+u.home)
	wantAbsent(t, marker)

	out, code = run("--workspace", u.ws, "--", tool)
	wantRefusedRun(t, out, code, "the executable "+tool+" is in "+u.home+", the home directory", "broker serve --read-path DIR")
	wantAbsent(t, marker)

	wantFactsUnchanged(t, before, authorityFacts(t, state))
}
