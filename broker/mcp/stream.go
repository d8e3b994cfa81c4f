package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFrame bounds one inbound line. The largest request the broker
// accepts (argv within wire.MaxArgvBytes, escaped) fits many times over.
const maxFrame = 8 << 20

// lineTransport is the MCP stdio transport: newline-delimited JSON-RPC
// messages on r and w. Unlike the SDK's IOTransport, which ends the
// session at the first line it cannot decode, it answers such a line with
// a JSON-RPC error (parse error; invalid request, or a line over
// maxFrame, whose bytes are discarded as they come) and keeps serving. It
// takes no batches, which the protocol dropped in 2025-06-18.
type lineTransport struct {
	r io.Reader
	w io.Writer
}

func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{w: t.w, frames: make(chan frame), closed: make(chan struct{})}
	go c.readLines(t.r)
	return c, nil
}

// frame is one inbound line, or the end of the stream.
type frame struct {
	line    []byte
	tooLong bool
	err     error
}

type lineConn struct {
	wmu    sync.Mutex
	w      io.Writer
	frames chan frame
	closed chan struct{}
	once   sync.Once
}

// readLines reads r line by line until it ends or the connection closes.
// A read of stdin cannot be interrupted: after Close it ends at the next
// line or at EOF.
func (c *lineConn) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		f, err := readLine(br)
		if (len(f.line) > 0 || f.tooLong) && !c.send(f) {
			return
		}
		if err != nil {
			c.send(frame{err: err})
			return
		}
	}
}

// readLine reads up to a newline or the end, keeping at most maxFrame
// bytes: past that the line is only marked too long.
func readLine(br *bufio.Reader) (frame, error) {
	var f frame
	for {
		chunk, err := br.ReadSlice('\n')
		if !f.tooLong && len(f.line)+len(chunk) > maxFrame {
			f.line, f.tooLong = nil, true
		}
		if !f.tooLong {
			f.line = append(f.line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return f, err
		}
	}
}

func (c *lineConn) send(f frame) bool {
	select {
	case c.frames <- f:
		return true
	case <-c.closed:
		return false
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var f frame
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case f = <-c.frames:
		}
		line := bytes.TrimSpace(f.line)
		switch {
		case f.err != nil:
			return nil, f.err
		case len(line) == 0 && !f.tooLong:
			continue
		}
		msg, code, why := decodeLine(line, f.tooLong)
		if msg != nil {
			return msg, nil
		}
		if err := c.reject(code, why); err != nil {
			return nil, err
		}
	}
}

// decodeLine decodes one message, or says why the line is none.
func decodeLine(line []byte, tooLong bool) (jsonrpc.Message, int64, string) {
	switch {
	case tooLong:
		return nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("a line over %d bytes is not read", maxFrame)
	case !json.Valid(line):
		return nil, jsonrpc.CodeParseError, "not JSON"
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, jsonrpc.CodeInvalidRequest, "not one JSON-RPC message: " + err.Error()
	}
	return msg, 0, ""
}

// reject answers a line that is no message; its id is not known.
func (c *lineConn) reject(code int64, message string) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
	if err != nil {
		panic("mcp: internal error: " + err.Error())
	}
	return c.writeLine(b)
}

func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

func (c *lineConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }
