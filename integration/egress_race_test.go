//go:build linux

package integration

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestEgressNothingButTheProxy(t *testing.T) { egressNothingButTheProxy(t, rootEgressBench(t)) }

func TestEgressNothingButTheProxyAsUser(t *testing.T) {
	egressNothingButTheProxy(t, userEgressBench(t))
}

// egressNothingButTheProxy runs testdata/egress/race.c, built by the
// host's gcc into the workspace, with a lease for a listener it never
// asks the proxy for: threads rewrite the sockaddr between the proxy's
// port and a forbidden listener's while connect is in flight (IPv4, and
// IPv4-mapped IPv6), blocking and not; sendto, sendmsg and sendmmsg with
// MSG_FASTOPEN; connect after TCP_FASTOPEN_CONNECT; a reconnect after
// AF_UNSPEC; io_uring's connect. The forbidden listener, and the granted
// one, receive nothing; every connect that succeeded ended at the proxy.
func egressNothingButTheProxy(t *testing.T, b *egressBench) {
	gcc := hostTool(t, "gcc")
	granted, forbidden := listen(t, "tcp4", "127.0.0.1:0"), listen(t, "tcp4", "127.0.0.1:0")
	src, err := filepath.Abs(filepath.Join("testdata", "egress", "race.c"))
	if err != nil {
		t.Fatal(err)
	}
	hostRun(t, b.ws, nil, gcc, "-O2", "-Wall", "-pthread", "-o", filepath.Join(b.ws, "race"), src)
	b.ready()
	j := b.run([]string{fmt.Sprintf("127.0.0.1:%d", portOf(granted))}, "./race", fmt.Sprint(portOf(forbidden))).ok(t)
	t.Logf("race:\n%s", j.Stdout.Text)
	requireNoConnection(t, forbidden)
	requireNoConnection(t, granted)
	out := j.Stdout.Text
	for _, fam := range []string{"race4", "race6"} {
		m := regexp.MustCompile(`(?m)^` + fam + ` ok=(\d+) refused=(\d+) escaped=(\d+) other=(\d+)$`).FindStringSubmatch(out)
		// Some connects must have reached the proxy, or the race proved
		// nothing about the path that lets one through.
		if m == nil || m[1] == "0" || m[3] != "0" || m[4] != "0" {
			t.Errorf("%s: want connects that ended at the proxy, none elsewhere and no other error:\n%s", fam, out)
		}
	}
	want := map[string]string{
		"fastopen_sendto":     "errno EPERM",
		"fastopen_sendmsg":    "errno EPERM",
		"fastopen_sendmmsg":   "errno EPERM",
		"fastopen_connect":    "errno EACCES",
		"reconnect_proxy":     "done",
		"reconnect_unspec":    "errno EACCES",
		"reconnect_forbidden": "errno EACCES",
		"io_uring_connect":    "errno EPERM",
	}
	for name, w := range want {
		if !strings.Contains(out, "\n"+name+" "+w+"\n") {
			t.Errorf("%s: want %q:\n%s", name, w, out)
		}
	}
}
