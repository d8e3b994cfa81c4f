//go:build linux

package integration

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ptyRun is one command on a pseudo-terminal the test opened itself:
// the command's stdin, stdout and stderr are the terminal, which is its
// controlling terminal, and its process group is the terminal's
// foreground group. So bytes written to the master side are typed keys:
// with ISIG on (the default), "\x03" makes the terminal driver send
// SIGINT to the command, and "\x04" at the start of a line is end of
// file, as on a real terminal.
type ptyRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	out    *syncBuffer
	read   chan struct{} // closed once the master has reported the end of the terminal
	exited chan struct{} // closed once the command has exited
}

// openPTY opens a new pseudo-terminal: posix_openpt, unlockpt and ptsname
// by their ioctls.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("skip: no pseudo-terminals on this host: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the terminal: %v", err)
	}
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ISIG == 0 || tio.Lflag&unix.ICANON == 0 {
		t.Fatalf("the new terminal is not in canonical mode with ISIG: %+v %v", tio, err)
	}
	return m, s
}

// startPTY starts `broker ARGS...` on a new terminal.
func startPTY(t *testing.T, args ...string) *ptyRun {
	t.Helper()
	master, slave := openPTY(t)
	p := &ptyRun{t: t, master: master, out: &syncBuffer{}, read: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.Command(bins.broker, args...)
	p.cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = slave, slave, slave
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the command holds the terminal now; EIO on the master once it is gone
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.out.Write(buf[:n])
			if err != nil {
				close(p.read)
				return
			}
		}
	}()
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		master.Close()
	})
	return p
}

// await waits until the terminal has shown want and returns everything
// shown so far. It fails if the command exits first.
func (p *ptyRun) await(want string) string {
	p.t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		if s := p.out.String(); strings.Contains(s, want) {
			return s
		}
		select {
		case <-p.exited:
			<-p.read
			if s := p.out.String(); strings.Contains(s, want) {
				return s
			}
			p.t.Fatalf("broker exited (%v) before showing %q:\n%s", p.cmd.ProcessState, want, p.out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	p.t.Fatalf("the terminal never showed %q:\n%s", want, p.out)
	return ""
}

var cardID = regexp.MustCompile(`━━ (ar-[0-9a-f]+) ━━`)

// prompted waits for the approval prompt and returns the id of the
// request on the card shown above it.
func (p *ptyRun) prompted() string {
	p.t.Helper()
	s := p.await(promptText)
	m := cardID.FindAllStringSubmatch(s, -1)
	if len(m) == 0 {
		p.t.Fatalf("a prompt without a card:\n%s", s)
	}
	return m[len(m)-1][1]
}

// promptText ends the question `broker run` asks on a terminal.
const promptText = "[y/N] "

// typeKeys writes s to the terminal as if typed.
func (p *ptyRun) typeKeys(s string) {
	p.t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		p.t.Fatal(err)
	}
}

// wantExit waits for the command to exit with status want, after what
// the test did.
func (p *ptyRun) wantExit(want int, after string) {
	p.t.Helper()
	if code := p.wait(); code != want {
		p.t.Fatalf("broker run: exit %d %s, want %d:\n%s", code, after, want, p.out)
	}
}

// afterPrompt is what the terminal showed from the last prompt on.
func (p *ptyRun) afterPrompt() string {
	s := p.out.String()
	return s[max(strings.LastIndex(s, promptText), 0):]
}

// wait waits for the command to exit and everything it wrote to be read,
// and returns its exit status.
func (p *ptyRun) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(daemonSafety):
		p.t.Fatalf("broker did not exit:\n%s", p.out)
	}
	<-p.read
	return p.cmd.ProcessState.ExitCode()
}
