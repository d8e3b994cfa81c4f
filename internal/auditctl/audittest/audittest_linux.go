package audittest

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/internal/auditctl"
)

// Enable turns the kernel's audit on for t and restores it to disabled
// in Cleanup if it was. It skips unless WARRANT_TEST_HOST_AUDIT is set
// (audit is host-wide, and tests of other packages running beside t
// would see it), and where t is not root or the kernel has no audit.
func Enable(t testing.TB) {
	t.Helper()
	if os.Getenv("WARRANT_TEST_HOST_AUDIT") == "" {
		t.Skip("skip: enables audit host-wide, which other packages' tests running beside it would see; make test runs it alone (WARRANT_TEST_HOST_AUDIT=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: CAP_AUDIT_CONTROL and CAP_AUDIT_READ")
	}
	was, _, err := auditctl.Status()
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ECONNREFUSED) {
		t.Skipf("the kernel has no audit: %v", err)
	}
	if err != nil {
		t.Skipf("cannot read the audit status: %v", err)
	}
	if was {
		return
	}
	if err := auditctl.SetEnabled(true); err != nil {
		t.Skipf("cannot enable audit: %v", err)
	}
	t.Cleanup(func() {
		if err := auditctl.SetEnabled(false); err != nil {
			t.Errorf("restore audit to disabled: %v", err)
		}
	})
}
