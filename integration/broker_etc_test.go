//go:build linux

package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// etcPlant is what an /etc test plants under /etc before the policy is
// made (the broker walks /etc when it starts), each removed at cleanup.
type etcPlant struct {
	secrets []string          // files the policy must withhold: planted, and the host's own
	content map[string]string // a planted file's content
	plain   string            // a world-readable file of /etc's own top level
}

// plantEtc plants, under a fresh token: a file only its owner may read
// (/etc/warrant-T.conf, 0600: the mode rule), and files readable by
// everyone that only their name makes secret (an ssh host key, a file in
// sudoers.d and one in ssl/private, each 0644, where the directory
// exists; sudoers.d is made if missing); plus a plain file. The host's
// shadow and gshadow are added when present.
func plantEtc(t *testing.T) *etcPlant {
	t.Helper()
	tok := token(t)
	p := &etcPlant{content: map[string]string{}}
	put := func(path string, mode os.FileMode, secret bool) {
		t.Helper()
		content := "WARRANT-ETC-" + tok + "-" + filepath.Base(path) + "\n"
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(path) })
		p.content[path] = content
		if secret {
			p.secrets = append(p.secrets, path)
		}
	}
	put("/etc/warrant-"+tok+".conf", 0o600, true)
	if st, err := os.Stat("/etc/ssh"); err == nil && st.IsDir() {
		put("/etc/ssh/ssh_host_"+tok+"_key", 0o644, true)
	}
	if _, err := os.Stat("/etc/sudoers.d"); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir("/etc/sudoers.d", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/etc/sudoers.d") })
	}
	put("/etc/sudoers.d/warrant."+tok, 0o644, true) // a '.' in the name: sudo skips the file
	if st, err := os.Stat("/etc/ssl/private"); err == nil && st.IsDir() {
		put("/etc/ssl/private/warrant-"+tok+".key", 0o644, true)
	}
	for _, f := range []string{"/etc/shadow", "/etc/gshadow"} {
		if _, err := os.Stat(f); err == nil {
			p.secrets = append(p.secrets, f)
		}
	}
	p.plain = "/etc/warrant-" + tok + ".txt"
	put(p.plain, 0o644, false)
	return p
}

// etcRun is one action's result, whoever ran it.
type etcRun struct {
	outcome, stdout, stderr string
	exit                    int32
	err                     string
}

// etcAllowed are commands that read what programs read under /etc, and
// what each must print; a command whose program is missing is skipped.
func etcAllowed() []struct {
	argv []string
	want func(stdout, stderr string) bool
} {
	type c = struct {
		argv []string
		want func(stdout, stderr string) bool
	}
	prefix := func(p string) func(string, string) bool {
		return func(out, _ string) bool { return strings.HasPrefix(out, p) }
	}
	cs := []c{
		{[]string{"getent", "passwd", "root"}, prefix("root:")},
		{[]string{"python3", "-c", "import pwd; print(pwd.getpwnam('root').pw_name)"}, prefix("root\n")},
		{[]string{"python3", "-c", "import ssl; print(ssl.create_default_context().cert_store_stats()['x509_ca'] > 0)"}, prefix("True\n")},
		{[]string{"git", "--version"}, prefix("git version")},
		{[]string{"java", "-version"}, func(_, errOut string) bool { return strings.Contains(errOut, "version") }},
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		cs = append(cs, c{[]string{"head", "-c", "27", "/etc/ssl/certs/ca-certificates.crt"}, prefix("-----BEGIN CERTIFICATE-----")})
	}
	if _, err := os.Stat("/etc/ssl/openssl.cnf"); err == nil { // beside ssl/private
		cs = append(cs, c{[]string{"head", "-c", "1", "/etc/ssl/openssl.cnf"}, func(out, _ string) bool { return len(out) == 1 }})
	}
	var have []c
	for _, x := range cs {
		if _, err := exec.LookPath(x.argv[0]); err == nil {
			have = append(have, x)
		}
	}
	return have
}

// checkEtc runs every secret read and every allowed command through run:
// each `head -c 20 SECRET` fails with EACCES and prints no byte of it;
// each allowed command exits 0 with what it must print.
func checkEtc(t *testing.T, p *etcPlant, run func(argv ...string) etcRun) {
	t.Helper()
	if len(p.secrets) < 4 {
		t.Fatalf("only %d secrets planted or present (%v); the test proves too little", len(p.secrets), p.secrets)
	}
	for _, s := range p.secrets {
		r := run("head", "-c", "20", s)
		if r.outcome != "exited" || r.exit == 0 || r.stdout != "" || !strings.Contains(r.stderr, "Permission denied") {
			t.Errorf("head -c 20 %s: %s exit %d, stdout %q, stderr %q, error %s; want EACCES and no byte", s, r.outcome, r.exit, r.stdout, r.stderr, r.err)
		}
		if c := p.content[s]; c != "" && strings.Contains(r.stdout+r.stderr, c[:20]) {
			t.Errorf("the content of %s reached the output", s)
		}
	}
	allowed := etcAllowed()
	t.Logf("%d secrets, %d allowed commands: %v", len(p.secrets), len(allowed), p.secrets)
	for _, c := range allowed {
		r := run(c.argv...)
		if r.outcome != "exited" || r.exit != 0 || !c.want(r.stdout, r.stderr) {
			t.Errorf("%s: %s exit %d, stdout %q, stderr %q, error %s", strings.Join(c.argv, " "), r.outcome, r.exit, r.stdout, r.stderr, r.err)
		}
	}
	if r := run("head", "-c", "100", p.plain); r.exit != 0 || r.stdout != p.content[p.plain] {
		t.Errorf("head %s (a plain file of /etc): exit %d, stdout %q, stderr %q, error %s", p.plain, r.exit, r.stdout, r.stderr, r.err)
	}
}

func (j *runJSON) etc() etcRun {
	r := etcRun{outcome: j.Outcome, stdout: j.Stdout.Text, stderr: j.Stderr.Text, exit: -1}
	if j.ExitCode != nil {
		r.exit = *j.ExitCode
	}
	if j.Error != nil {
		r.err = j.Error.Code + ": " + j.Error.Message
	}
	return r
}

// TestBrokerEtcSecretsWithheld: a root broker's target reads what
// programs read under /etc (passwd through getent and python, the CA
// bundle, git, java, the TLS default context) and no byte of shadow,
// gshadow, an ssh host key, a sudoers.d file, an ssl/private file or a
// file only its owner may read: each read fails EACCES.
func TestBrokerEtcSecretsWithheld(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: plants files under /etc; needs root")
	}
	p := plantEtc(t)
	d := startBroker(t, "") // after the plant: the policy is made when the broker starts
	a := d.newAgent(t)
	checkEtc(t, p, func(argv ...string) etcRun {
		_, j, _ := a.run(wire.ProfileShort, argv...)
		return j.etc()
	})
}

// TestBrokerEtcSecretsWithheldAsUser: the same as uid 65534, whose own
// modes already keep shadow and the 0600 file from it: the files only
// their name makes secret (0644 here) are withheld by the policy alone.
func TestBrokerEtcSecretsWithheldAsUser(t *testing.T) {
	u := asNobody(t)
	p := plantEtc(t)
	checkEtc(t, p, func(argv ...string) etcRun {
		j := u.run(argv...)
		return j.etc()
	})
}

// TestBrokerEtcEntryReplaced: a file of /etc's top level replaced by
// rename after the policy was made (a new inode, as resolv.conf or
// ld.so.cache are rewritten) is no longer readable — the policy granted
// the old file — and every later action still runs: nothing is refused
// for the drift.
func TestBrokerEtcEntryReplaced(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: plants files under /etc; needs root")
	}
	p := plantEtc(t)
	d := startBroker(t, "")
	a := d.newAgent(t)
	read := func() etcRun {
		_, j, _ := a.run(wire.ProfileShort, "head", "-c", "100", p.plain)
		return j.etc()
	}
	if r := read(); r.exit != 0 || r.stdout != p.content[p.plain] {
		t.Fatalf("before the rename: exit %d, stdout %q, stderr %q, error %s", r.exit, r.stdout, r.stderr, r.err)
	}
	next := p.plain + ".new"
	if err := os.WriteFile(next, []byte("REPLACED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(next) })
	if err := os.Rename(next, p.plain); err != nil {
		t.Fatal(err)
	}
	if r := read(); r.outcome != "exited" || r.exit == 0 || r.stdout != "" || !strings.Contains(r.stderr, "Permission denied") {
		t.Fatalf("after the rename: %s exit %d, stdout %q, stderr %q, error %s; want EACCES", r.outcome, r.exit, r.stdout, r.stderr, r.err)
	}
	_, j, _ := a.run(wire.ProfileShort, "getent", "passwd", "root")
	if r := j.etc(); r.exit != 0 || !strings.HasPrefix(r.stdout, "root:") {
		t.Fatalf("an action after the rename: %s exit %d, stdout %q, error %s", r.outcome, r.exit, r.stdout, r.err)
	}
}

// withBrokerPolicy is req with the read set (read_exec, read_entries and
// their pins) of the policy a real daemon makes for exe, taken from the
// approval request it raises.
func withBrokerPolicy(b *testing.B, req *wire.SpawnRequest, exe string) *wire.SpawnRequest {
	a := startBroker(b, "").newAgent(b)
	s, err := a.cl.Submit(a.WS, a.request(wire.ProfileShort, exe))
	if err != nil || s.Approval == nil {
		b.Fatalf("want an approval request, got %+v, %v", s, err)
	}
	pol := s.Approval.Identity.Policy
	r := *req
	r.Policy.ReadExec, r.Policy.ReadEntries, r.Policy.Pins = pol.ReadExec, pol.ReadEntries, nil
	for _, p := range pol.Pins {
		if slices.Contains(pol.ReadExec, p.Path) || slices.Contains(pol.ReadEntries, p.Path) {
			r.Policy.Pins = append(r.Policy.Pins, p)
		}
	}
	b.Logf("the broker's policy: %d read_exec, %d read_entries, %d excluded", len(pol.ReadExec), len(pol.ReadEntries), len(pol.Excluded))
	return &r
}

// TestLauncherEtcEntryDrift: an entry of policy.read_entries that is not
// its pin any more — replaced by rename, or by a symlink — is skipped:
// the launch goes ahead, that entry reads EACCES and the others read as
// granted. The same drift on a read_exec path is refused IDENTITY_DRIFT
// and nothing runs.
func TestLauncherEtcEntryDrift(t *testing.T) {
	a := newAction(t)
	put := func(name, content string) string {
		t.Helper()
		p := filepath.Join(a.Outside, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pinNow := func(p string) wire.PathPin {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return wire.PathPin{Path: p, Dev: st.Dev, Ino: st.Ino}
	}
	kept, replaced, linked := put("kept", "KEPT"), put("replaced", "OLD"), put("linked", "LINKED")
	pins := []wire.PathPin{pinNow(kept), pinNow(replaced), pinNow(linked)}
	if err := os.Rename(put("new", "NEW"), replaced); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(linked); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("kept", linked); err != nil {
		t.Fatal(err)
	}
	withEntries := func(req *wire.SpawnRequest) *wire.SpawnRequest {
		req.Policy.ReadEntries = []string{kept, linked, replaced}
		req.Policy.Pins = append(req.Policy.Pins, pins...)
		slices.SortFunc(req.Policy.Pins, func(x, y wire.PathPin) int { return strings.Compare(x.Path, y.Path) })
		return req
	}
	for path, want := range map[string]string{replaced: "errno EACCES\n", kept: "ok\nKEPT", linked: "ok\nKEPT"} {
		r := a.Run(withEntries(a.Helper("read", path)))
		r.Ready(t)
		if r.Stdout != want {
			t.Errorf("read %s: %q, want %q", path, r.Stdout, want)
		}
	}
	req := a.Helper("write", "marker", "ran")
	req.Policy.ReadExec = append(req.Policy.ReadExec, replaced)
	req.Policy.Pins = append(req.Policy.Pins, pins[1])
	slices.SortFunc(req.Policy.Pins, func(x, y wire.PathPin) int { return strings.Compare(x.Path, y.Path) })
	a.Run(req).Refused(t, wire.CodeIdentityDrift)
	noMarker(t, a.Workspace)
}
