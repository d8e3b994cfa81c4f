package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestEgressFlags: run's --egress asks for entries and presets as given;
// approve's grants exact entries, canonical, sorted, each once, or none;
// what neither takes is a usage error before anything is sent.
func TestEgressFlags(t *testing.T) {
	var f egressFlag
	for _, v := range []string{"npm, Registry.NPMjs.org:443", "127.0.0.1:4873"} {
		if err := f.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if asked, err := f.asked(); err != nil || !slices.Equal(asked, []string{"npm", "Registry.NPMjs.org:443", "127.0.0.1:4873"}) {
		t.Fatalf("run --egress: %q, %v", asked, err)
	}
	if _, err := f.granted(); err == nil || !strings.Contains(err.Error(), "not a preset's name") {
		t.Fatalf("approve --egress with a preset: %v", err)
	}
	grant := egressFlag{"sum.golang.org:443", "Proxy.Golang.org:443", "sum.golang.org:443"}
	if got, err := grant.granted(); err != nil || !slices.Equal(got, []string{"proxy.golang.org:443", "sum.golang.org:443"}) {
		t.Fatalf("approve --egress: %q, %v", got, err)
	}
	if got, err := (egressFlag{"none"}).granted(); err != nil || got != nil {
		t.Fatalf("approve --egress none: %q, %v", got, err)
	}
	if _, err := (egressFlag{"none", "a.example:1"}).granted(); err == nil {
		t.Fatal("approve --egress none,a.example:1 was taken")
	}
	if err := new(egressFlag).Set("a.example:1,,b.example:2"); err == nil {
		t.Fatal("an empty entry was taken")
	}

	state := t.TempDir()
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"approve", "ar-1", "--egress", "*.example.com:443"}, "no wildcards"},
		{[]string{"approve", "ar-1", "--egress", "example.com.:443"}, "trailing dot"},
		{[]string{"approve", "ar-1", "--egress", "none", "--egress", "a.example:1"}, "it goes alone"},
		{[]string{"run", "--egress", "127.1:80", "--", "/bin/true"}, "neither a host name nor an IPv4 address"},
		{[]string{"run", "--egress", "Npm", "--", "/bin/true"}, "neither host:port nor a preset name"},
	} {
		var out bytes.Buffer
		code := Main(append([]string{c.args[0], "--state", state}, c.args[1:]...), &out, &out)
		if code == 0 || !strings.Contains(out.String(), c.says) || strings.Contains(out.String(), "SANDBOX_UNAVAILABLE") {
			t.Errorf("broker %s: exit %d:\n%s", strings.Join(c.args, " "), code, out.String())
		}
	}
}
