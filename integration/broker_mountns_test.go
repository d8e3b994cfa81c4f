//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"warrant/receipt"
	"warrant/wire"
)

// protectedAttempts are writes to what git and agents obey outside the
// sandbox; the script prints ALLOWED for each that succeeds. Then the
// repository is used as a developer would: it must all work.
const protectedAttempts = `for c in 'echo x > .git/hooks/pre-commit' 'echo x >> .git/config' \
  'echo x > .claude/settings.json' 'echo x > .git/hooks/post-checkout' 'mv .git .gitx' \
  'rm -r .git/hooks' 'chmod 0777 .git/config'; do
  if sh -c "$c" 2>/dev/null; then echo "ALLOWED $c"; fi
done
echo b >> a.txt && git add . && git commit -qm second && git checkout -qb side && git checkout -q - && git log --oneline | wc -l`

// mountRepo makes ws a repository with one commit, a hook and an agent
// config, and returns the protected files' bytes.
func mountRepo(t *testing.T, ws string) map[string][]byte {
	t.Helper()
	for _, argv := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.name", "T"}, {"config", "user.email", "t@example.invalid"}} {
		if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, argv...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", argv, err, out)
		}
	}
	files := map[string][]byte{".git/hooks/pre-commit": []byte("#!/bin/sh\nexit 0\n"), ".claude/settings.json": []byte("{}\n"), "a.txt": []byte("a\n")}
	for rel, b := range files {
		if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, rel), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("sh", "-c", "cd "+ws+" && git -c safe.directory='*' add . && git -c safe.directory='*' commit -qm first").CombinedOutput(); err != nil {
		t.Fatalf("first commit: %v\n%s", err, out)
	}
	cfg, err := os.ReadFile(filepath.Join(ws, ".git/config"))
	if err != nil {
		t.Fatal(err)
	}
	files[".git/config"] = cfg
	delete(files, "a.txt")
	return files
}

// checkMounted requires a run of protectedAttempts to have been refused
// every protected write while git worked, and the host files unchanged.
func checkMounted(t *testing.T, ws string, files map[string][]byte, stdout string, rc *receipt.Receipt) {
	t.Helper()
	if strings.Contains(stdout, "ALLOWED") || strings.TrimSpace(stdout) != "2" {
		t.Fatalf("stdout %q: every protected write must fail and git must work", stdout)
	}
	for rel, want := range files {
		if got, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s on the host: %q %v, want %q", rel, got, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(ws, ".git/config")); err != nil || st.Mode().Perm() == 0o777 {
		t.Fatalf(".git/config mode %v %v", st, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git/hooks/post-checkout")); !os.IsNotExist(err) {
		t.Fatalf("a hook was created on the host (%v)", err)
	}
	if out, err := exec.Command("git", "-c", "safe.directory=*", "-C", ws, "log", "--oneline").Output(); err != nil || strings.Count(string(out), "\n") != 2 {
		t.Fatalf("the commit made in the sandbox: %q %v", out, err)
	}
	if rc.Protected == nil || rc.Protected.By != wire.ProtectedByMount || rc.Protected.Binds < 4 || len(rc.Protected.Changes) != 0 {
		t.Fatalf("receipt protected %+v", rc.Protected)
	}
}

// TestBrokerProtectedPathsAreReadOnly: with a root broker the launcher
// binds the protected entries read-only in a private mount namespace.
func TestBrokerProtectedPathsAreReadOnly(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("skip: git is not on this host: %v", err)
	}
	d := shared(t)
	a := d.newAgent(t)
	files := mountRepo(t, a.WS)
	_, res, code := a.run(wire.ProfileStandard, "/bin/sh", "-c", protectedAttempts)
	if code != 0 {
		t.Fatalf("exit %d, %+v %+v", code, res, res.Error)
	}
	checkMounted(t, a.WS, files, res.Stdout.Text, d.Receipt(*res.ReceiptID))
}

// TestBrokerProtectedPathsAreReadOnlyAsUser: an ordinary user's broker
// starts each launcher in a user namespace of its own, where it can make
// the same mount namespace.
func TestBrokerProtectedPathsAreReadOnlyAsUser(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("skip: git is not on this host: %v", err)
	}
	u := asNobody(t)
	files := mountRepo(t, u.ws)
	u.chownHome()
	cmd := u.command(filepath.Join(u.bin, "broker"), "run", "--approve", "--json", "--workspace", u.ws, "--profile", "standard",
		"--", "/bin/sh", "-c", protectedAttempts)
	out, err := cmd.Output()
	var res runJSON
	if jerr := json.Unmarshal(out, &res); err != nil || jerr != nil {
		t.Fatalf("broker run as uid %d: %v %v\n%s", nobody, err, jerr, out)
	}
	out, err = u.command(filepath.Join(u.bin, "broker"), "receipts", "show", "--json", *res.ReceiptID).Output()
	if err != nil {
		t.Fatalf("receipts show: %v\n%s", err, out)
	}
	var shown struct {
		Receipt receipt.Receipt `json:"receipt"`
	}
	if err := json.Unmarshal(out, &shown); err != nil {
		t.Fatalf("receipts show --json: %v\n%s", err, out)
	}
	checkMounted(t, u.ws, files, res.Stdout.Text, &shown.Receipt)
}

// TestBrokerProtectedPathsDetectedWithoutUserNamespaces: an ordinary
// user's broker on a host that allows it no user namespace (here: one
// whose user.max_user_namespaces is 0, inside a namespace of the test's
// own) makes no mount namespace; every write reaches the host and is
// detected: listed in the result and the receipt, which says "detect".
func TestBrokerProtectedPathsDetectedWithoutUserNamespaces(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("skip: git is not on this host: %v", err)
	}
	u := asNobody(t)
	mountRepo(t, u.ws)
	u.chownHome()
	inner := u.command(filepath.Join(u.bin, "broker"), "run", "--approve", "--json", "--workspace", u.ws, "--profile", "standard",
		"--", "/bin/sh", "-c", "echo x > .git/hooks/pre-commit && echo y > .claude/settings.json")
	cmd := exec.Command("/bin/sh", append([]string{"-c", `echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"`, "sh"}, inner.Args...)...)
	cmd.Dir, cmd.Env = inner.Dir, inner.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}}, GidMappingsEnableSetgroups: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res runJSON
	if jerr := json.Unmarshal(out, &res); err != nil || jerr != nil {
		t.Fatalf("broker run as uid %d without user namespaces: %v %v\n%s\n%s", nobody, err, jerr, out, stderr.String())
	}
	listed := map[string]bool{}
	for _, c := range res.ProtectedChanges {
		listed[c.Path] = true
	}
	for _, p := range []string{".git/hooks/pre-commit", ".claude/settings.json"} {
		if b, err := os.ReadFile(filepath.Join(u.ws, p)); err != nil || len(b) != 2 || !listed[p] {
			t.Fatalf("%s: host %q %v, listed %v: without a mount namespace the write happens and is listed", p, b, err, listed[p])
		}
	}
	out, err = u.command(filepath.Join(u.bin, "broker"), "receipts", "show", "--json", *res.ReceiptID).Output()
	var shown struct {
		Receipt receipt.Receipt `json:"receipt"`
	}
	if jerr := json.Unmarshal(out, &shown); err != nil || jerr != nil {
		t.Fatalf("receipts show --json: %v %v\n%s", err, jerr, out)
	}
	if p := shown.Receipt.Protected; p == nil || p.By != wire.ProtectedByDetect || p.Binds != 0 || len(p.Changes) != 2 {
		t.Fatalf("receipt protected %+v", p)
	}
}
