package linux

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The tests and benchmarks that apply the launcher's steps to the test
// process do so on throwaway threads (onThread). A locked goroutine that
// ends on the main thread would park it, changed, for good: the main
// goroutine keeps it.
func init() { runtime.LockOSThread() }

// onThread runs f on a goroutine locked to its thread and never unlocked,
// so that the runtime ends the thread with whatever f changed in it.
func onThread(f func() error) error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		done <- f()
	}()
	return <-done
}

// TestBoundingSetEmptiedAndChecked: step 1 empties the bounding set, and
// step 8 refuses one that is not empty, as a user namespace entered in
// between would leave it.
func TestBoundingSetEmptiedAndChecked(t *testing.T) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [capabilityWords]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil || data[0].Effective&(1<<unix.CAP_SETPCAP) == 0 {
		t.Skipf("skip: the test process lacks CAP_SETPCAP (%v), without which neither step touches the bounding set", err)
	}
	if err := onThread(dropCapabilities); err == nil || !strings.Contains(err.Error(), "bounding set") {
		t.Errorf("step 8 with a full bounding set: %v, want a refusal", err)
	}
	var status []byte
	err := onThread(func() (err error) {
		if err = dropBoundingSet(); err == nil {
			err = dropCapabilities()
		}
		if err == nil {
			status, err = os.ReadFile("/proc/thread-self/status")
		}
		return err
	})
	if err != nil {
		t.Fatalf("steps 1 and 8: %v", err)
	}
	for _, name := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if !strings.Contains(string(status), "\n"+name+":\t0000000000000000\n") {
			t.Errorf("%s is not empty after steps 1 and 8:\n%s", name, status)
		}
	}
}
