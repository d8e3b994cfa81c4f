//go:build linux

package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// The Prepare's /etc entries stand in as files outside every grant (an
// action's Outside, or a directory of the test's), pinned with their real
// dev/ino, as TestLauncherEtcEntryDrift does: the harness grants /etc
// itself whole.

// pinOf pins the object at p, not following a symlink.
func pinOf(t testing.TB, p string) wire.PathPin {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return wire.PathPin{Path: p, Dev: st.Dev, Ino: st.Ino}
}

// withEntries makes paths req's read_entries, each pinned as it is now.
func withEntries(t testing.TB, req *wire.SpawnRequest, paths ...string) *wire.SpawnRequest {
	t.Helper()
	req.Policy.ReadEntries = paths
	for _, p := range paths {
		req.Policy.Pins = append(req.Policy.Pins, pinOf(t, p))
	}
	slices.SortFunc(req.Policy.Pins, func(x, y wire.PathPin) int { return strings.Compare(x.Path, y.Path) })
	return req
}

// prepareOf is the Prepare of a request whose read_entries are paths.
func prepareOf(t testing.TB, paths ...string) *wire.Prepare {
	t.Helper()
	return withEntries(t, &wire.SpawnRequest{}, paths...).Policy.Prepared()
}

// TestLauncherPrepareGrantsAhead: a request sent after the Prepare of its
// own /etc entries, to a launcher started cold or warm, reads a listed
// entry's bytes and gets EACCES on an unlisted sibling, exactly as
// without a Prepare.
func TestLauncherPrepareGrantsAhead(t *testing.T) {
	a := newAction(t)
	listed := writeFile(t, filepath.Join(a.Outside, "listed"), "LISTED")
	also := writeFile(t, filepath.Join(a.Outside, "also"), "ALSO")
	unlisted := writeFile(t, filepath.Join(a.Outside, "unlisted"), secret)
	modes := map[string]launch{"no prepare": {}, "cold": {}, "warm": {Warm: 300 * time.Millisecond}}
	for name, l := range modes {
		for path, want := range map[string]string{listed: "ok\nLISTED", also: "ok\nALSO", unlisted: "errno EACCES\n"} {
			l.Req = withEntries(t, a.Helper("read", path), listed, also)
			if name != "no prepare" {
				if l.Prepare = l.Req.Policy.Prepared(); len(l.Prepare.Entries) != 2 {
					t.Fatalf("the Prepare lists %v, want 2 entries", l.Prepare.Entries)
				}
			}
			r := a.Launch(l)
			r.Ready(t)
			if r.Stdout != want {
				t.Errorf("%s: read %s: %q, want %q", name, filepath.Base(path), r.Stdout, want)
			}
		}
	}
	unchanged(t, unlisted, secret)
}

// TestLauncherPrepareMustMatch: a request whose /etc entries are not
// exactly those of the Prepare before it — one more there (a secret the
// request does not grant), one with another pin, one missing, none — is
// refused ARGUMENTS_INVALID and nothing runs, neither a target writing a
// marker nor one reading the secret; the secret is untouched. The
// request with its own Prepare runs.
func TestLauncherPrepareMustMatch(t *testing.T) {
	dir := t.TempDir()
	kept := writeFile(t, filepath.Join(dir, "kept"), "KEPT")
	also := writeFile(t, filepath.Join(dir, "also"), "ALSO")
	hidden := writeFile(t, filepath.Join(dir, "secret"), secret)
	if err := os.Chmod(hidden, 0o600); err != nil {
		t.Fatal(err)
	}
	var before unix.Stat_t
	if err := unix.Stat(hidden, &before); err != nil {
		t.Fatal(err)
	}
	// Each case runs in an action of its own, so that a marker left by one
	// fails only that one.
	write := func(a *action) *wire.SpawnRequest {
		return withEntries(a.t, a.Helper("write", "marker", "ran"), also, kept)
	}
	read := func(a *action) *wire.SpawnRequest { return withEntries(a.t, a.Helper("read", hidden), also, kept) }
	bare := func(a *action) *wire.SpawnRequest { return withEntries(a.t, a.Helper("write", "marker", "ran")) }
	repinned := prepareOf(t, also, kept)
	repinned.Entries[1].Ino = before.Ino // kept's path, the secret's inode
	cases := map[string]struct {
		req  func(*action) *wire.SpawnRequest
		prep *wire.Prepare
	}{
		"one more":             {write, prepareOf(t, also, kept, hidden)},
		"one more, then read":  {read, prepareOf(t, also, kept, hidden)},
		"another pin":          {write, repinned},
		"one missing":          {write, prepareOf(t, kept)},
		"none":                 {write, &wire.Prepare{Protocol: wire.SpawnProtocol}},
		"none asked, one made": {bare, prepareOf(t, kept)},
	}
	for name, c := range cases {
		for mode, warm := range map[string]time.Duration{"cold": 0, "warm": 100 * time.Millisecond} {
			t.Run(name+", "+mode, func(t *testing.T) {
				a := newAction(t)
				ref := a.Launch(launch{Req: c.req(a), Prepare: c.prep, Warm: warm}).Refused(t, wire.CodeArgumentsInvalid)
				if !strings.Contains(ref.Detail, "not the ones prepared") {
					t.Fatalf("refused for another reason: %s", ref.Detail)
				}
				noMarker(t, a.Workspace)
			})
		}
	}
	var after unix.Stat_t
	if err := unix.Stat(hidden, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ino != before.Ino || after.Mode != before.Mode || after.Size != before.Size || after.Mtim != before.Mtim || after.Ctim != before.Ctim {
		t.Fatalf("the secret's metadata changed: %+v, was %+v", after, before)
	}
	unchanged(t, hidden, secret)
	a := newAction(t)
	req := write(a)
	a.Launch(launch{Req: req, Prepare: req.Policy.Prepared()}).Ready(t)
	unchanged(t, a.Path("marker"), "ran")
}

// TestLauncherPrepareHostile: descriptors with the Prepare, two Prepares
// before the request, a Prepare where the request belongs, a Prepare of
// protocol 4, a Proceed after the Prepare, and a Prepare after which the
// broker's end shuts without a request: each is refused
// ARGUMENTS_INVALID, for its own reason, and nothing runs.
func TestLauncherPrepareHostile(t *testing.T) {
	entry := writeFile(t, filepath.Join(t.TempDir(), "entry"), "ENTRY")
	prep := prepareOf(t, entry)
	frame := func(m wire.Message) []byte {
		b, err := wire.EncodeFrame(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	body := frame(prep)[4:]
	if bytes.Count(body, []byte("\x68protocol\x05")) != 1 {
		t.Fatal("the Prepare's protocol is not where the test changes it")
	}
	cases := map[string]struct {
		l    launch
		want string // in the refusal's detail
	}{
		"descriptors":        {launch{Prepare: prep, PrepareFDs: true}, "descriptors came with the Prepare"},
		"two prepares":       {launch{PrepareFrames: [][]byte{frame(prep), frame(prep)}}, "a second message follows the request"},
		"prepare as request": {launch{Prepare: prep, Frame: frame(prep)}, "the message is prepare, not a request"},
		"protocol 4":         {launch{PrepareFrames: [][]byte{reframe(bytes.Replace(body, []byte("\x68protocol\x05"), []byte("\x68protocol\x04"), 1))}}, "protocol: 4 is not the spawn protocol 5"},
		"proceed as request": {launch{Prepare: prep, Frame: frame(&wire.Proceed{})}, "the message is proceed, not a request"},
		"hangup after it":    {launch{Prepare: prep, Hangup: true}, "end of stream"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAction(t) // of its own: a marker fails only this case
			c.l.Req = withEntries(t, a.Helper("write", "marker", "x"), entry)
			ref := a.Launch(c.l).Refused(t, wire.CodeArgumentsInvalid)
			if !strings.Contains(ref.Detail, c.want) {
				t.Fatalf("refused for another reason: %s", ref.Detail)
			}
			noMarker(t, a.Workspace)
		})
	}
}

// preparedAndWaiting waits until the launcher pid has read everything
// sent on sock, the Prepare (SIOCOUTQ: nothing of ours is queued), and
// waits in recvmsg on fd 3 — still a moment later, so this is the read of
// the request and the Prepare's entries are granted.
func preparedAndWaiting(t testing.TB, sock, pid int) {
	t.Helper()
	for deadline := time.Now().Add(launchSafety); ; time.Sleep(time.Millisecond) {
		n, err := unix.IoctlGetInt(sock, unix.SIOCOUTQ)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the launcher %d never read the Prepare", pid)
		}
	}
	awaitingProceed(t, pid)
	time.Sleep(20 * time.Millisecond)
	awaitingProceed(t, pid)
}

// TestLauncherPrepareEntryReplaced: an entry replaced by rename after a
// warm launcher granted it from the Prepare (and before the request,
// whose pins are the old ones, so it matches) does not stop the launch,
// and the new file at its path is not readable: the rule binds the old
// inode. Another entry reads as granted. The rename waits until the
// launcher has read the Prepare and waits for the request
// (preparedAndWaiting), so it falls between the grant and the request.
func TestLauncherPrepareEntryReplaced(t *testing.T) {
	a := newAction(t)
	kept := writeFile(t, filepath.Join(a.Outside, "kept"), "KEPT")
	replaced := writeFile(t, filepath.Join(a.Outside, "replaced"), "OLD")
	next := writeFile(t, filepath.Join(a.Outside, "next"), "NEW")
	old := pinOf(t, replaced)
	run := func(path string, waiting func(testing.TB, int, int)) *result {
		req := withEntries(t, a.Helper("read", path), kept, replaced) // pinned before the rename
		return a.Launch(launch{Req: req, Prepare: req.Policy.Prepared(), Warm: time.Millisecond, Waiting: waiting})
	}
	r := run(replaced, func(t testing.TB, sock, pid int) {
		preparedAndWaiting(t, sock, pid)
		if err := os.Rename(next, replaced); err != nil {
			t.Fatal(err)
		}
	})
	r.Ready(t)
	if r.Stdout != "errno EACCES\n" {
		t.Errorf("read the replaced entry: %q, want EACCES", r.Stdout)
	}
	unchanged(t, replaced, "NEW")
	if pinOf(t, replaced) == old {
		t.Fatal("the rename kept the inode")
	}
	r = run(kept, nil)
	if r.Ready(t); r.Stdout != "ok\nKEPT" {
		t.Errorf("read the kept entry: %q", r.Stdout)
	}
}

// TestLauncherPrepareSamePrivileges: an entry is opened with the same
// privileges with a Prepare or without one (step 2), so a root broker's
// launcher grants the same either way. The entry lies in a directory
// only another user may search, and a hard link elsewhere reaches it:
// the target reads the same through the link in all three launches.
func TestLauncherPrepareSamePrivileges(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: a directory root cannot search without its capabilities needs root to make")
	}
	a := newAction(t)
	priv, pub := filepath.Join(a.Outside, "priv"), filepath.Join(a.Outside, "pub")
	for _, d := range []string{priv, pub} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entry := writeFile(t, filepath.Join(priv, "entry"), "ENTRY")
	link := filepath.Join(pub, "link")
	if err := os.Link(entry, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(priv, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for name, l := range map[string]launch{"no prepare": {}, "cold": {}, "warm": {Warm: 200 * time.Millisecond}} {
		l.Req = withEntries(t, a.Helper("read", link), entry)
		if name != "no prepare" {
			l.Prepare = l.Req.Policy.Prepared()
		}
		r := a.Launch(l)
		r.Ready(t)
		seen[name] = r.Stdout
	}
	if seen["cold"] != seen["no prepare"] || seen["warm"] != seen["no prepare"] {
		t.Fatalf("the launches disagree: %q", seen)
	}
}
