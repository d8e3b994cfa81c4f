//go:build linux

package integration

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// activate starts `broker serve --state state` as systemd's socket
// activation does: with the listening sockets ls as descriptors 3… and
// LISTEN_PID (set by a shell that then execs the broker, keeping its pid)
// and LISTEN_FDS naming them.
func activate(t *testing.T, state string, ls ...*net.UnixListener) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=`+strconv.Itoa(len(ls))+` exec "$0" serve --state "$1"`, bins.broker, state)
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	for _, l := range ls {
		f, err := l.File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, log
}

// listenAt binds a listening unix socket at p, as a socket unit does.
func listenAt(t *testing.T, p string) *net.UnixListener {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
	return l
}

// TestSocketActivation: `broker serve` started with the sockets a systemd
// socket unit made (LISTEN_PID, LISTEN_FDS, descriptors 3 and 4, in
// either order) serves on them: an action submitted through them runs
// (its marker is on the host), and when the daemon stops the socket
// files stay, as the unit owns them. Sockets bound to other paths are
// refused with a sentence naming the paths it expected, and nothing is
// served.
func TestSocketActivation(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	run := filepath.Join(state, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	agentPath, operatorPath := client.SocketPaths(state)
	operator, agent := listenAt(t, operatorPath), listenAt(t, agentPath)
	cmd, log := activate(t, state, operator, agent) // the order of the unit's lines, not the broker's
	d := &brokerd{t: t, State: state, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { cmd.Wait(); close(d.done) }()
	a := d.newAgent(t)
	marker := filepath.Join(a.WS, "activated")
	h := a.Start(a.request(wire.ProfileShort, "/usr/bin/touch", marker), 1)
	if r := a.End(h); r.Outcome != wire.Exited || *r.ExitCode != 0 {
		t.Fatalf("%s %+v\n%s", r.Outcome, r.Error, log)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the action did not run: %v", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(daemonSafety):
		t.Fatalf("broker serve did not stop on SIGTERM:\n%s", log)
	}
	for _, p := range []string{agentPath, operatorPath} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("the socket unit's %s was removed: %v", p, err)
		}
	}

	other := listenAt(t, filepath.Join(t.TempDir(), "elsewhere.sock"))
	bad, badLog := activate(t, state, other, listenAt(t, filepath.Join(t.TempDir(), "x.sock")))
	err := bad.Wait()
	if err == nil || !strings.Contains(badLog.String(), "make warrant.socket's ListenStream= lines those paths") ||
		!strings.Contains(badLog.String(), agentPath) {
		t.Fatalf("serve on unexpected sockets: %v\n%s", err, badLog)
	}
}

// TestDefaultStateListensInTheRuntimeDir: for the default state
// directory, with a private $XDG_RUNTIME_DIR, the daemon listens in
// $XDG_RUNTIME_DIR/warrant (where warrant.socket puts its sockets) and
// `broker run` finds it there; with a runtime directory others can
// enter, both use the state directory's run/.
func TestDefaultStateListensInTheRuntimeDir(t *testing.T) {
	for _, c := range []struct {
		name string
		mode os.FileMode
		want string // the socket directory, relative to the test's root
	}{
		{"private", 0o700, "runtime/warrant"},
		{"shared", 0o755, "state/warrant/run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			rt := filepath.Join(root, "runtime")
			if err := os.Mkdir(rt, c.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(rt, c.mode)
			env := append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher, "XDG_STATE_HOME="+filepath.Join(root, "state"), "XDG_RUNTIME_DIR="+rt)
			env = slicesWithout(env, "WARRANT_STATE=")
			serve := exec.Command(bins.broker, "serve")
			serve.Env = env
			log := &syncBuffer{}
			serve.Stdout, serve.Stderr = log, log
			if err := startDaemon(serve); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				serve.Process.Kill()
				serve.Wait()
				removeScopeCgroups(filepath.Join(root, "state", "warrant"))
			})
			sock := filepath.Join(root, c.want, "agent.sock")
			for i := 0; ; i++ {
				if _, err := os.Stat(sock); err == nil && strings.Contains(log.String(), "serving") {
					break
				}
				if i == dialAttempts {
					t.Fatalf("no socket at %s:\n%s", sock, log)
				}
				time.Sleep(5 * time.Millisecond)
			}
			ws := t.TempDir()
			run := exec.Command(bins.broker, "run", "--approve", "--json", "--workspace", ws, "--", "/usr/bin/touch", filepath.Join(ws, "m"))
			run.Env = env
			var out bytes.Buffer
			run.Stdout = &out
			if err := run.Run(); err != nil {
				t.Fatalf("broker run: %v\n%s\n%s", err, out.String(), log)
			}
			if _, err := os.Stat(filepath.Join(ws, "m")); err != nil || !strings.Contains(log.String(), sock) {
				t.Fatalf("the run did not go through the daemon at %s: %v\n%s", sock, err, log)
			}
		})
	}
}

func slicesWithout(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}
