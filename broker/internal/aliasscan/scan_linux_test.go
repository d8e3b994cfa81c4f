package aliasscan

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A tree without multiply-linked files passes, and the counts are those
// of the tree: every name listed, every directory walked once, every
// regular file checked; symlinks (to a file, to a directory, to /) are
// counted as names and never followed.
func TestScanCountsATree(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a", "1")
	write(t, root, "d/b", "2")
	write(t, root, "d/e/c", "3")
	for name, target := range map[string]string{"d/to-a": "../a", "to-root": "/", "to-d": "d"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	res := mustScan(t, root)
	// names: a d to-root to-d | b e to-a | c
	if res.Entries != 8 || res.Dirs != 3 || res.Files != 3 || len(res.Aliased) != 0 {
		t.Fatalf("scan = %+v, want 8 entries, 3 dirs, 3 files, nothing aliased", res)
	}
}

// A file planted in the tree as a second name of a file outside it is
// reported with its path relative to the root; so is every inside name of
// a file with three names, two inside and one outside. A file whose two
// names are both inside is not.
func TestScanFindsNamesOutside(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := write(t, base, "outside/secret", "s")
	triple := write(t, base, "outside/triple", "t")
	link(t, outside, filepath.Join(root, "deep/er/planted"))
	link(t, triple, filepath.Join(root, "t1"))
	link(t, triple, filepath.Join(root, "deep/t2"))
	inside := write(t, root, "obj/one", "o")
	link(t, inside, filepath.Join(root, "copy/one"))
	res := mustScan(t, root)
	want := []string{"deep/er/planted", "deep/t2", "t1"}
	if !slices.Equal(res.Aliased, want) {
		t.Fatalf("aliased = %q, want %q", res.Aliased, want)
	}
	if res.Files != 5 {
		t.Fatalf("files = %d, want 5", res.Files)
	}
	// The same links, scanned from their common parent, are all inside.
	if res := mustScan(t, base); len(res.Aliased) != 0 {
		t.Fatalf("scanning the parent, aliased = %q, want none", res.Aliased)
	}
}

// The scope is the root given: a subdirectory whose files have their
// other names beside it is aliased when scanned alone.
func TestScanScopeIsTheRoot(t *testing.T) {
	root := t.TempDir()
	f := write(t, root, "a/f", "x")
	link(t, f, filepath.Join(root, "b/f"))
	if res := mustScan(t, root); len(res.Aliased) != 0 {
		t.Fatalf("whole tree: aliased = %q", res.Aliased)
	}
	if res := mustScan(t, filepath.Join(root, "b")); !slices.Equal(res.Aliased, []string{"f"}) {
		t.Fatalf("subtree b: aliased = %q, want [f]", res.Aliased)
	}
}

// `git clone` of a repository in the same tree hard-links the objects;
// all their names are inside, so the tree passes. The test first proves
// that the clone really made links.
func TestScanGitCloneInside(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("skip: git is not installed")
	}
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command(gitPath, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q", "src")
	write(t, root, "src/README", "hello\n")
	write(t, root, "src/lib/code.go", "package lib\n")
	git("-C", "src", "add", ".")
	git("-C", "src", "commit", "-q", "-m", "first")
	git("clone", "-q", "src", "clone")
	res := mustScan(t, root)
	if len(res.Aliased) != 0 {
		t.Fatalf("aliased = %q, want none", res.Aliased)
	}
	linkedObjects := 0
	filepath.Walk(filepath.Join(root, "clone/.git/objects"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Sys().(*syscall.Stat_t).Nlink > 1 {
			linkedObjects++
		}
		return nil
	})
	if linkedObjects == 0 {
		t.Fatal("the clone hard-linked no object: the test proves nothing")
	}
	// The clone alone has its objects' other names outside it.
	if res := mustScan(t, filepath.Join(root, "clone")); len(res.Aliased) != linkedObjects {
		t.Fatalf("the clone alone: %d aliased, want its %d linked objects", len(res.Aliased), linkedObjects)
	}
}

// A FIFO with no writer, a listening unix socket, symlink loops and a
// device node in the tree neither block the scan nor fail it: none of
// them is opened. A watchdog stops the test if the scan blocks.
func TestScanSpecialFilesDoNotBlock(t *testing.T) {
	root, err := os.MkdirTemp("", "as") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	link(t, filepath.Join(root, "fifo"), filepath.Join(root, "sub/fifo2")) // several names, not a regular file
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(root, "sock")}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(sock, 1); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"self": "self", "a": "b", "b": "a", "dot": ".", "up": "..", "sub/loop": ".."} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	devices := 0
	if err := unix.Mknod(filepath.Join(root, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
		devices = 1
	} else {
		t.Logf("no device node in the tree (mknod: %v)", err)
	}
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		res, err = scan(t, root)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
	case <-watchdog():
		t.Fatal("the scan blocked on a special file")
	}
	// fifo sub sock self a b dot up [null] | fifo2 loop
	if res.Entries != 10+devices || res.Dirs != 2 || res.Files != 0 || len(res.Aliased) != 0 {
		t.Fatalf("scan = %+v", res)
	}
}

// A directory that is not the one the walk stat'ed — a symlink, a file,
// or another directory swapped in — is ErrChanged, never followed; one
// mounted over since is a mount point.
func TestScanSwappedDirectory(t *testing.T) {
	root := t.TempDir()
	write(t, root, "file", "x")
	for _, d := range []string{"dir", "other"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("dir", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	rootf := openRoot(t, root)
	dirFacts, err := statAt(int(rootf.Fd()), "dir")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"link", "file", "other"} {
		w := &walker{deadline: farDeadline(), walked: map[fileID]bool{}, linked: map[fileID]*linked{}}
		// As if fstatat had said "dir" and then name was renamed over it.
		err := w.dir(int(rootf.Fd()), name, name, dirFacts.id, 1)
		if !errors.Is(err, ErrChanged) {
			t.Errorf("%s entered where dir was stat'ed: %v, want ErrChanged", name, err)
		}
	}
	w := &walker{deadline: farDeadline(), walked: map[fileID]bool{}, linked: map[fileID]*linked{}}
	if err := w.dir(int(rootf.Fd()), "gone", "gone", dirFacts.id, 1); err != nil {
		t.Errorf("a directory removed since it was listed: %v, want it skipped", err)
	}
	t.Run("mounted over", func(t *testing.T) {
		// The same directory mounted onto itself since it was stat'ed:
		// the same dev and inode, on another mount.
		bindMount(t, filepath.Join(root, "dir"), filepath.Join(root, "dir"))
		w := &walker{deadline: farDeadline(), mnt: dirFacts.mnt, walked: map[fileID]bool{}, linked: map[fileID]*linked{}}
		var me *MountError
		if err := w.dir(int(rootf.Fd()), "dir", "dir", dirFacts.id, 1); !errors.As(err, &me) || me.Name != "dir" {
			t.Errorf("dir mounted over once stat'ed: %v, want a MountError", err)
		}
	})
}

// A mount point anywhere in the tree fails the scan, naming it, and
// nothing beneath it is entered: a directory bind-mounted from outside, a
// directory bind-mounted onto itself (the same dev and inode, another
// mount) and a file bind-mounted over a file inside. Check refuses with
// WORKSPACE_ALIASED and says what to do.
func TestScanRefusesMountPoints(t *testing.T) {
	base := t.TempDir()
	outside := write(t, base, "outside/secret", "s")
	for _, c := range []struct{ name, src, dst string }{
		{"a directory from outside", "outside", "ws/deep/sub"},
		{"a directory onto itself", "ws/deep/sub", "ws/deep/sub"},
		{"a file over a file", "outside/secret", "ws/deep/file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(base, "ws")
			write(t, root, "deep/sub/f", "x")
			write(t, root, "deep/file", "x")
			bindMount(t, filepath.Join(base, c.src), filepath.Join(base, c.dst))
			rel := strings.TrimPrefix(c.dst, "ws/")
			res, err := scan(t, root)
			var me *MountError
			if !errors.As(err, &me) || me.Name != rel || res != nil {
				t.Fatalf("scan = %+v, %v; want the mount point %s", res, err, rel)
			}
			_, err = Check(openRoot(t, root))
			requireRefusal(t, err, `"`+rel+`" in the workspace is a mount point`)
			requireRefusal(t, err, "the workspace must be one filesystem with no mounts inside it")
		})
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "s" {
		t.Fatalf("the file outside: %q, %v", b, err)
	}
}

// bindMount mounts src onto dst (made if missing) until the test ends; it
// skips where mounting is not allowed.
func bindMount(t *testing.T, src, dst string) {
	t.Helper()
	if _, err := os.Lstat(dst); os.IsNotExist(err) {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("skip: cannot bind-mount here (needs root or a mount namespace): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dst, err)
		}
	})
}

// Every kind of file with a name outside the tree is an alias, not only a
// regular file: a FIFO, a unix socket, a symlink's own inode and (as root)
// a character device node, each made outside and linked in. Each is
// reported by its name inside; Check's sentence names its kind. None is
// opened (the FIFO has no writer, the socket a listener that must not
// hear from the scan).
func TestScanFindsEveryKindOutside(t *testing.T) {
	base, err := os.MkdirTemp("", "as") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	root, out := filepath.Join(base, "ws"), filepath.Join(base, "o")
	for _, d := range []string{root, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(out, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	link(t, filepath.Join(out, "fifo"), filepath.Join(root, "fifo"))
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(out, "s")}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(sock, 1); err != nil {
		t.Fatal(err)
	}
	link(t, filepath.Join(out, "s"), filepath.Join(root, "sub/sock"))
	if err := os.Symlink("/etc/passwd", filepath.Join(out, "sym")); err != nil {
		t.Fatal(err)
	}
	link(t, filepath.Join(out, "sym"), filepath.Join(root, "sym")) // linkat without AT_SYMLINK_FOLLOW: the symlink itself
	want := []string{"fifo", "sub/sock", "sym"}
	kinds := []string{`"fifo" (a FIFO)`, `"sub/sock" (a socket)`, `"sym" (a symlink)`}
	if err := unix.Mknod(filepath.Join(out, "null"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err == nil {
		link(t, filepath.Join(out, "null"), filepath.Join(root, "null"))
		want = append(want, "null")
		kinds = append(kinds, `"null" (a character device)`)
		slices.Sort(want)
	} else {
		t.Logf("no device node (mknod: %v)", err)
	}
	res := mustScan(t, root)
	if !slices.Equal(res.Aliased, want) {
		t.Fatalf("aliased = %q, want %q", res.Aliased, want)
	}
	_, err = Check(openRoot(t, root))
	for _, k := range kinds {
		requireRefusal(t, err, k)
	}
	if _, _, err := unix.Accept(sock); err != unix.EAGAIN {
		t.Fatalf("the listener outside heard from the scan: accept = %v", err)
	}
}

// A directory the broker cannot list fails the scan: it is never
// skipped, since what it holds is unknown.
func TestScanUnreadableDirectoryFails(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("skip: root lists every directory (CAP_DAC_OVERRIDE), so none is unreadable to it; this runs as any other uid")
	}
	root := t.TempDir()
	write(t, root, "locked/f", "x")
	if err := os.Chmod(filepath.Join(root, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
	if res, err := scan(t, root); !errors.Is(err, unix.EACCES) || res != nil {
		t.Fatalf("scan = %+v, %v; want EACCES and no result", res, err)
	}
}

// The root may be any directory descriptor, O_PATH included, and must be
// a directory.
func TestScanRootMustBeADirectory(t *testing.T) {
	f, err := os.Open(write(t, t.TempDir(), "f", "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Scan(f, farDeadline()); err == nil {
		t.Fatal("a regular file was scanned as a root")
	}
}
