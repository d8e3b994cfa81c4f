package integration

import (
	"os"
	"testing"

	"warrant/wire"
)

func TestLauncherRefusesASecondRequest(t *testing.T) {
	a := newAction(t)
	r := a.Launch(launch{Req: a.Helper("write", "marker", "x"), Second: true})
	r.Refused(t, wire.CodeArgumentsInvalid)
	if _, err := os.Stat(a.Path("marker")); !os.IsNotExist(err) {
		t.Fatalf("the marker exists: %v", err)
	}
}
