package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"warrant/broker/view"
	"warrant/wire"
)

// A refusal reads the same to a person and to a program: `broker run
// --json` carries in error.message the sentence the text shows (an
// INTERNAL one plainly, a failure of this client's own in words), never
// the Go error chain; --debug prints the chain on stderr, in text and
// JSON mode alike, and never into the object (docs/json.md).
func TestRunErrorSaysTheSameInJSONAndText(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		code  string
		said  string
		chain string
	}{
		{"internal", wire.Errorf(wire.CodeInternal, "the broker failed internally: write frame: broken pipe"), "INTERNAL",
			"the broker failed internally (--debug prints its own account of it)", "write frame: broken pipe"},
		{"this client's own", fmt.Errorf("read reply to submit: %w; the broker may have carried it out", &net.OpError{Op: "read", Net: "unix",
			Err: os.NewSyscallError("read", syscall.ECONNRESET)}), "IO_FAILED",
			"read reply to submit: the connection failed: connection reset by peer; the broker may have carried it out", "read unix"},
	} {
		for _, debug := range []bool{false, true} {
			var text, textErr, js, jsErr bytes.Buffer
			(&Env{Stdout: &text, Stderr: &textErr, Debug: debug}).report(view.Ending{Err: c.err}, nil)
			(&Env{Stdout: &js, Stderr: &jsErr, Debug: debug, JSON: true}).report(view.Ending{Err: c.err}, nil)
			var got struct {
				Error *view.Error `json:"error"`
			}
			if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.Error == nil {
				t.Fatalf("%s: broker run --json printed %v:\n%s", c.name, err, js.String())
			}
			if got.Error.Code != c.code || got.Error.Message != c.said || strings.Contains(js.String(), c.chain) {
				t.Errorf("%s, --debug %v: the JSON error is %+v, want %s: %q", c.name, debug, *got.Error, c.code, c.said)
			}
			if !strings.Contains(textErr.String(), c.code+": "+c.said) {
				t.Errorf("%s, --debug %v: the text does not say %q:\n%s", c.name, debug, c.said, textErr.String())
			}
			for mode, stderr := range map[string]string{"text": textErr.String(), "JSON": jsErr.String()} {
				if strings.Contains(stderr, "detail: ") != debug || strings.Contains(stderr, c.chain) != debug {
					t.Errorf("%s, --debug %v: the %s mode's stderr: %q", c.name, debug, mode, stderr)
				}
			}
		}
	}
}
