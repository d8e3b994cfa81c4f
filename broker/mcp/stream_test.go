package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"warrant/broker/client"
)

// TestStreamSurvivesBadLines: on the stdio stream, a line that is not
// JSON, JSON that is no JSON-RPC message, and a line over maxFrame are
// each answered with a JSON-RPC error, and the session goes on; every
// line the server writes is one JSON-RPC message.
func TestStreamSurvivesBadLines(t *testing.T) {
	r := newRig(t)
	agent, err := client.Dial(r.state)
	must(t, err)
	defer agent.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- ServeStream(context.Background(), Config{Agent: &agent.Agent, StateDir: r.state, Workspace: r.ws, Log: r.serverLogs}, inR, outW)
		outW.Close()
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			var m map[string]any
			if !ok || json.Unmarshal([]byte(l), &m) != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("the server wrote %q, which is no JSON-RPC message (stream open: %v)", l, ok)
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		return nil
	}
	errorCode := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for line, code := range map[string]float64{
		"garbage":                  -32700,
		`{"not":"json-rpc"}`:       -32600,
		strings.Repeat("x", 9<<20): -32600,
	} {
		send(line)
		if m := next(); errorCode(m) != code || m["id"] != nil {
			t.Fatalf("line %.20q: want error %v with id null, got %v", line, code, m)
		}
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := next(); m["id"] != 2.0 || m["result"] == nil {
		t.Fatalf("tools/list after the bad lines: %v", m)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Logf("serve ended: %v", err)
	}
}
