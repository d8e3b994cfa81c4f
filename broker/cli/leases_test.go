package cli

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"warrant/wire"
)

// `broker leases` says of a lease the broker would never match that it
// will not match, in its state column as in JSON (view.LeaseOf), and why
// on the next line; it is listed without --all, beside the usable one,
// and not the used-up one.
func TestLeasesTextSaysWillNotMatch(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	why := "granted under another environment (GOFLAGS set now), will not match"
	ls := []wire.LeaseView{
		{ID: "l-wont", UsesLeft: 3, ExpiresUnix: now.Unix() + 3600, Executable: "/bin/echo", WillNotMatch: why},
		{ID: "l-ok", UsesLeft: 2, ExpiresUnix: now.Unix() + 3600, Executable: "/bin/echo"},
		{ID: "l-spent", UsesLeft: 0, ExpiresUnix: now.Unix() + 3600, Executable: "/bin/echo"},
	}
	var out bytes.Buffer
	e := &Env{Stdout: &out, State: "/s"}
	e.printLeases(shownLeases(ls, false, now), len(ls), now)
	text := out.String()
	for _, want := range []string{
		`(?m)^l-wont  will not match +ends in 1h +/bin/echo$`,
		`(?m)^    ` + regexp.QuoteMeta(why) + `: a submit of its command does not use it now; ` + "`broker revoke l-wont --state /s` ends it$",
		`(?m)^l-ok  2 use\(s\) left +ends in 1h +/bin/echo$`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("broker leases does not show %s:\n%s", want, text)
		}
	}
	if regexp.MustCompile(`3 use\(s\) left|l-spent`).MatchString(text) {
		t.Errorf("broker leases shows the lease that will not match as usable, or the spent one:\n%s", text)
	}
}
