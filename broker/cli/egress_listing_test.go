package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/broker"
	"warrant/broker/client"
	"warrant/broker/internal/seam"
	"warrant/internal/jsonschema"
	"warrant/wire"
)

// TestEgressListedOnApprovalsAndLeases: `broker approvals --json` shows
// the exact list a request asked for (its identity's egress), and the
// lease the operator granted with another list (`approve --egress`)
// shows the granted one, not the asked one, in `approve`'s and `leases`'
// text ("May connect to: …") and JSON alike; a lease of a request
// without egress lists none. Each JSON document is valid under its
// schema (docs/schemas).
func TestEgressListedOnApprovalsAndLeases(t *testing.T) {
	dir := t.TempDir()
	state, ws, tool := filepath.Join(dir, "state"), filepath.Join(dir, "ws"), filepath.Join(dir, "bin", "tool")
	raw, err := os.ReadFile("/bin/true")
	if err == nil {
		err = errors.Join(os.Mkdir(ws, 0o755), os.Mkdir(filepath.Dir(tool), 0o755), os.WriteFile(tool, raw, 0o755))
	}
	if err != nil {
		t.Fatal(err)
	}
	seam.InsecureSkipProbe = true // the executor starts nothing: there is nothing to probe
	b, err := broker.Open(context.Background(), broker.Config{StateDir: state, Executor: idle{}, Logf: t.Logf})
	seam.InsecureSkipProbe = false
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Serve(ctx); close(done) }()
	defer func() { cancel(); <-done; b.Close() }()
	for range 500 { // the socket exists from bind(2), a moment before listen(2)
		var cl *client.Client
		if cl, err = client.Dial(state); err == nil {
			cl.Close()
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := jsonschema.Load("../../docs/schemas")
	if err != nil {
		t.Fatal(err)
	}
	broker := func(schema string, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := Main(append([]string{args[0], "--state", state}, args[1:]...), &out, &out); code != 0 {
			t.Fatalf("broker %s: exit %d:\n%s", strings.Join(args, " "), code, out.String())
		}
		if schema != "" {
			if err := schemas.Validate(schema, out.Bytes()); err != nil {
				t.Fatalf("broker %s: %v:\n%s", strings.Join(args, " "), err, out.String())
			}
		}
		return out.String()
	}
	ask := func(argv string, egress ...string) string {
		t.Helper()
		m, err := b.Submit(context.Background(), &wire.Submit{Workspace: ws,
			Request: wire.ActionRequest{Executable: tool, Argv: []string{argv}, Cwd: ".", Profile: wire.ProfileShort, Egress: egress}})
		ar, ok := m.(*wire.ApprovalRequired)
		if err != nil || !ok {
			t.Fatalf("submit: %+v, %v", m, err)
		}
		return ar.Request.ID
	}
	asked, plain := ask("fetch", "Registry.npmjs.org:443", "127.0.0.1:4873"), ask("offline")

	var approvals struct {
		Items []struct {
			ID       string `json:"id"`
			Identity struct {
				Egress []string `json:"egress"`
			} `json:"identity"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(broker("approvals.v1.json", "approvals", "--json")), &approvals); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, a := range approvals.Items {
		got[a.ID] = a.Identity.Egress
	}
	if want := []string{"127.0.0.1:4873", "registry.npmjs.org:443"}; !slices.Equal(got[asked], want) || got[plain] == nil || len(got[plain]) != 0 {
		t.Fatalf("approvals --json shows egress %q (want %q) and %q (want [])", got[asked], want, got[plain])
	}

	if out := broker("", "approve", asked, "--egress", "registry.npmjs.org:443"); !strings.Contains(out, "May connect to: registry.npmjs.org:443.\n") {
		t.Errorf("approve --egress does not say the granted list:\n%s", out)
	}
	broker("approve.v1.json", "approve", plain, "--json")
	text := broker("", "leases")
	if n := strings.Count(text, "May connect to:"); n != 1 || !strings.Contains(text, "    May connect to: registry.npmjs.org:443\n") ||
		strings.Contains(text, "4873") {
		t.Errorf("leases does not show the granted list, under the one lease that has it:\n%s", text)
	}
	var leases struct {
		Items []struct {
			ApprovalID string   `json:"approval_id"`
			Egress     []string `json:"egress"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(broker("leases.v1.json", "leases", "--json")), &leases); err != nil {
		t.Fatal(err)
	}
	got = map[string][]string{}
	for _, l := range leases.Items {
		got[l.ApprovalID] = l.Egress
	}
	if !slices.Equal(got[asked], []string{"registry.npmjs.org:443"}) || got[plain] == nil || len(got[plain]) != 0 {
		t.Errorf("leases --json shows egress %q (want the granted list) and %q (want [])", got[asked], got[plain])
	}
}
