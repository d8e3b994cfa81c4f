package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"warrant/broker/view"
	"warrant/wire"
)

// An uncoded failure names what failed in words: a file by its path and
// the reason, a connection by the reason, never the system call; the
// broker's own steps stay.
func TestSystemWords(t *testing.T) {
	_, openErr := os.Open("/nonexistent-warrant-dir/caches")
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("list the caches: %w", openErr), "list the caches: /nonexistent-warrant-dir/caches: no such file or directory"},
		{fmt.Errorf("read: %w", os.NewSyscallError("flock", syscall.EBADF)), "read: bad file descriptor"},
		{fmt.Errorf("follow a-1: %w", &net.OpError{Op: "read", Net: "unix", Err: os.ErrDeadlineExceeded}), "follow a-1: the connection failed: i/o timeout"},
		{fmt.Errorf("read reply to submit: %w; the broker may have carried it out", &net.OpError{Op: "read", Net: "unix",
			Err: os.NewSyscallError("read", syscall.ECONNRESET)}), "read reply to submit: the connection failed: connection reset by peer; the broker may have carried it out"},
		{errors.New("lock state directory: another broker is using /s"), "lock state directory: another broker is using /s"},
	} {
		if got := systemWords(c.err); got != c.want {
			t.Errorf("systemWords(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A follower's broken stream is said in words, whatever the chain.
func TestFollowBroke(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("follow a-1: %w", &net.OpError{Op: "read", Net: "unix", Err: os.ErrDeadlineExceeded}), "the broker sent nothing for 10s"},
		{fmt.Errorf("follow a-1: %w", io.ErrUnexpectedEOF), "the broker closed the connection"},
		{fmt.Errorf("dial broker: %w", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), "no broker answers any more"},
		{errors.New("something else"), "the connection to the broker failed"},
	} {
		if got := FollowBroke(c.err); !strings.HasPrefix(got, c.want) {
			t.Errorf("FollowBroke(%q) = %q, want %q…", c.err, got, c.want)
		}
	}
}

// An INTERNAL refusal's message is the system's own account: a person
// reads a plain sentence, and --debug adds the message.
func TestInternalSaidPlainly(t *testing.T) {
	we := wire.Errorf(wire.CodeInternal, "the broker failed internally: write frame: broken pipe")
	for _, debug := range []bool{false, true} {
		var errb bytes.Buffer
		e := &Env{Stdout: io.Discard, Stderr: &errb, Debug: debug}
		e.report(view.Ending{Err: we}, nil)
		chain := strings.Contains(errb.String(), "broken pipe")
		if !strings.Contains(errb.String(), "INTERNAL: the broker failed internally (--debug prints its own account of it)") || chain != debug {
			t.Errorf("--debug %v: %q", debug, errb.String())
		}
	}
}

// A refusal names what the agent chose: none of its unprintable runes
// reaches the terminal as is.
func TestRefusalPrintsNoControlRune(t *testing.T) {
	for in, want := range map[string]string{
		"the workspace /w/a\x1b[2Kb is gone": `the workspace /w/a\x1b[2Kb is gone`,
		"x\u202ey":                           `x\u202ey`,
		"bad\xffbyte":                        `bad\xffbyte`,
		"plain ü words":                      "plain ü words",
	} {
		if got := plainly(wire.CodeArgumentsInvalid.String(), in); got != want {
			t.Errorf("plainly(%q) = %q, want %q", in, got, want)
		}
	}
}
