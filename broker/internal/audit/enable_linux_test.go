package audit

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// enableAudit turns the kernel's audit on for the test, as an operator
// would (auditctl -e 1), and restores the state before it in Cleanup. It
// skips where the test is not root or the kernel has no audit.
func enableAudit(t *testing.T) {
	t.Helper()
	if os.Getenv("WARRANT_TEST_HOST_AUDIT") == "" {
		t.Skip("skip: enables audit host-wide, which other packages' tests running beside it would see; make test runs it alone (WARRANT_TEST_HOST_AUDIT=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: CAP_AUDIT_CONTROL and CAP_AUDIT_READ")
	}
	was, _, err := Enabled()
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ECONNREFUSED) {
		t.Skipf("the kernel has no audit: %v", err)
	}
	if err != nil {
		t.Skipf("cannot read the audit status: %v", err)
	}
	if was {
		return
	}
	if err := setEnabled(true); err != nil {
		t.Skipf("cannot enable audit: %v", err)
	}
	t.Cleanup(func() {
		if err := setEnabled(false); err != nil {
			t.Errorf("restore audit to disabled: %v", err)
		}
	})
}

// setEnabled sends AUDIT_SET with the enabled field alone.
func setEnabled(on bool) error {
	var st [8]byte // struct audit_status: mask, enabled, … (the kernel takes a short one)
	binary.NativeEndian.PutUint32(st[0:4], unix.AUDIT_STATUS_ENABLED)
	if on {
		binary.NativeEndian.PutUint32(st[4:8], 1)
	}
	_, err := request(unix.AUDIT_SET, st[:], 0)
	return err
}
