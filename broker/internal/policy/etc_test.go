package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"warrant/wire"
)

// fakeEtc makes a tree under a new directory from entries: a name ending
// in "/" is a directory, "->" makes a symlink, and the mode follows a
// space (0644 and 0755 by default).
func fakeEtc(t *testing.T, entries ...string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "etc")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name, mode := e, os.FileMode(0)
		if i := strings.LastIndexByte(e, ' '); i >= 0 {
			name = e[:i]
			var m uint32
			for _, c := range e[i+1:] {
				m = m*8 + uint32(c-'0')
			}
			mode = os.FileMode(m)
		}
		p := filepath.Join(root, name)
		var err error
		switch {
		case strings.Contains(name, "->"):
			from, to, _ := strings.Cut(name, "->")
			err = os.Symlink(to, filepath.Join(root, from))
		case strings.HasSuffix(name, "/"):
			if mode == 0 {
				mode = 0o755
			}
			if err = os.Mkdir(p, 0o755); err == nil {
				defer os.Chmod(p, mode) // after its entries are made
			}
		default:
			if mode == 0 {
				mode = 0o644
			}
			if err = os.WriteFile(p, []byte("x"), 0o600); err == nil {
				err = os.Chmod(p, mode)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func paths(pins []wire.PathPin) []string {
	var out []string
	for _, p := range pins {
		out = append(out, p.Path)
	}
	return out
}

func rel(root string, ps []string) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, root), "/"))
	}
	return out
}

// TestSplitSecrets: /etc's secrets — by name whatever their mode
// (shadow, gshadow and their backups, sudoers and sudoers.d, ssl/private,
// ssh host private keys), and by mode (a file others cannot read, a
// directory they cannot read and search) — are withheld; a directory
// holding one is split into its entries, recursively; a clean directory is
// one grant; a directory with nothing readable beneath it is withheld
// whole; a symlink is neither.
func TestSplitSecrets(t *testing.T) {
	root := fakeEtc(t,
		"passwd", "shadow", "shadow-", "gshadow", "gshadow-", "sudoers 0440", "sudoers.d/", "sudoers.d/README",
		"hosts 0600", "owneronly/ 0700", "owneronly/f", "searchless/ 0754",
		"clean/", "clean/a", "clean/b/", "clean/b/c", "clean/link->../shadow",
		"ssl/", "ssl/openssl.cnf", "ssl/certs/", "ssl/certs/ca.pem", "ssl/certs/x.0->ca.pem", "ssl/private/", "ssl/private/k.pem",
		"ssh/", "ssh/ssh_config", "ssh/ssh_host_ed25519_key", "ssh/ssh_host_ed25519_key.pub", "ssh/ssh_host_key",
		"allsecret/", "allsecret/k 0600", "allsecret/l->k",
		"deep/", "deep/1/", "deep/1/2/", "deep/1/2/3/", "deep/1/2/3/f 0600", "deep/1/ok",
		"localtime->/usr/share/zoneinfo/UTC", "mtab->/proc/mounts",
	)
	grants, withheld := splitSecrets(root, walkLimits{depth: 16, entries: 1000, grants: 100, withheld: 100})
	wantGrants := []string{"clean", "deep/1/ok", "passwd", "ssh/ssh_config", "ssh/ssh_host_ed25519_key.pub", "ssl/certs", "ssl/openssl.cnf"}
	wantWithheld := []string{"allsecret", "deep/1/2", "gshadow", "gshadow-", "hosts", "owneronly", "searchless", "shadow", "shadow-",
		"ssh/ssh_host_ed25519_key", "ssh/ssh_host_key", "ssl/private", "sudoers", "sudoers.d"}
	if g, w := rel(root, paths(grants)), rel(root, withheld); !slices.Equal(g, wantGrants) || !slices.Equal(w, wantWithheld) {
		t.Fatalf("grants %q\nwant   %q\nwithheld %q\nwant     %q", g, wantGrants, w, wantWithheld)
	}
	for _, g := range grants { // each pinned to the object the walk decided on
		var st syscall.Stat_t
		if err := syscall.Lstat(g.Path, &st); err != nil || g.Dev != uint64(st.Dev) || g.Ino != st.Ino {
			t.Errorf("%s pinned %d:%d, is %d:%d (%v)", g.Path, g.Dev, g.Ino, st.Dev, st.Ino, err)
		}
	}
}

// TestSplitSecretsBounds: what the walk cannot finish within its bounds
// is withheld whole, never granted: a directory past the depth, every
// directory read past the entry count, a split that would take the grants
// or the withheld paths past their caps (the root itself, here). A clean
// root is one grant, a missing one nothing.
func TestSplitSecretsBounds(t *testing.T) {
	root := fakeEtc(t, "shadow", "a", "b", "c", "d/", "d/e/", "d/e/f", "d/k 0600")
	lim := walkLimits{depth: 16, entries: 1000, grants: 100, withheld: 100}
	cases := []struct {
		name           string
		lim            walkLimits
		grant, withold []string
	}{
		{"within", lim, []string{"a", "b", "c", "d/e"}, []string{"d/k", "shadow"}},
		{"depth", walkLimits{depth: 0, entries: 1000, grants: 100, withheld: 100}, []string{"a", "b", "c"}, []string{"d", "shadow"}},
		{"entries", walkLimits{depth: 16, entries: 6, grants: 100, withheld: 100}, []string{"a", "b", "c"}, []string{"d", "shadow"}},
		{"entries at the root", walkLimits{depth: 16, entries: 4, grants: 100, withheld: 100}, nil, []string{""}},
		{"grants", walkLimits{depth: 16, entries: 1000, grants: 3, withheld: 100}, nil, []string{""}},
		{"withheld", walkLimits{depth: 16, entries: 1000, grants: 100, withheld: 1}, nil, []string{""}},
	}
	for _, c := range cases {
		grants, withheld := splitSecrets(root, c.lim)
		if g, w := rel(root, paths(grants)), rel(root, withheld); !slices.Equal(g, append([]string{}, c.grant...)) || !slices.Equal(w, c.withold) {
			t.Errorf("%s: grants %q withheld %q; want %q and %q", c.name, g, w, c.grant, c.withold)
		}
	}
	clean := fakeEtc(t, "passwd", "x/", "x/y")
	if grants, withheld := splitSecrets(clean, lim); !slices.Equal(paths(grants), []string{clean}) || len(withheld) != 0 {
		t.Errorf("a clean root: grants %q withheld %q; want the root whole", paths(grants), withheld)
	}
	if grants, withheld := splitSecrets(filepath.Join(clean, "missing"), lim); len(grants)+len(withheld) != 0 {
		t.Errorf("a missing root: grants %q withheld %q; want nothing", paths(grants), withheld)
	}
}

// TestBaseWithholdsEtcSecrets: on this host, the base policy grants no
// path that is /etc/shadow or holds it, lists shadow among the excluded,
// pins every entry, and an executable in /etc's top level (its directory
// holds shadow) is refused rather than granted /etc whole.
func TestBaseWithholdsEtcSecrets(t *testing.T) {
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Skip("skip: no /etc/shadow on this host")
	}
	base, err := Base(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Concat(base.ReadExec, base.ReadEntries) {
		if beneath("/etc/shadow", p) {
			t.Errorf("%s is granted and holds /etc/shadow", p)
		}
		if _, ok := base.Pin(p); !ok {
			t.Errorf("%s is not pinned", p)
		}
	}
	if !slices.Contains(base.Excluded, "/etc/shadow") || !slices.Contains(base.ReadEntries, "/etc/passwd") {
		t.Fatalf("excluded %q, entries %q", base.Excluded, base.ReadEntries)
	}
	w, err := Withhold("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = For(base, w, t.TempDir(), wire.Executable{Requested: "/etc/hosts", File: wire.FileIdentity{Path: "/etc/hosts"}})
	if we, ok := err.(*wire.Error); !ok || we.Code != wire.CodePathInvalid {
		t.Fatalf("an executable in /etc: %v, want PATH_INVALID", err)
	}
	t.Logf("/etc: %d entries granted, %d excluded: %q", len(base.ReadEntries), len(base.Excluded), base.Excluded)
}
