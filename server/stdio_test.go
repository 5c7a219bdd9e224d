package server

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowServer is a go-sdk server with one tool that takes a while, to show that
// replies computed after stdin EOF are still written.
func slowServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(200 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	return s
}

func serveLines(t *testing.T, input string) []map[string]any {
	t.Helper()
	out := &lockedBuffer{}
	transport := newStdioTransport(strings.NewReader(input), out, slog.New(slog.DiscardHandler), nil)
	done := make(chan error, 1)
	go func() { done <- slowServer().Run(t.Context(), transport) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not end after stdin EOF")
	}
	var replies []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		replies = append(replies, m)
	}
	return replies
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

func TestEOFAnswersEveryRequestRead(t *testing.T) {
	for range 5 {
		input := initLine +
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}` + "\n" +
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}` + "\n" +
			`{"jsonrpc":"2.0","id":4,"method":"tools/list"}` + "\n"
		replies := serveLines(t, input)
		ids := map[float64]bool{}
		for _, r := range replies {
			ids[r["id"].(float64)] = true
		}
		if len(ids) != 4 {
			t.Fatalf("got replies for %v, want ids 1-4", ids)
		}
	}
}

func TestBadLinesAreAnsweredAndServingContinues(t *testing.T) {
	input := initLine +
		"this is not json\n" +
		`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":` + strings.Repeat(" ", maxLine) + "{}}\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	replies := serveLines(t, input)
	var parseErrors int
	listed := false
	for _, r := range replies {
		if e, ok := r["error"].(map[string]any); ok && e["code"].(float64) == -32700 {
			parseErrors++
			if len(e["message"].(string)) > 400 {
				t.Errorf("parse error echoes the line: %d bytes", len(e["message"].(string)))
			}
		}
		if r["id"] == float64(2) && r["result"] != nil {
			listed = true
		}
	}
	if parseErrors != 2 || !listed {
		t.Fatalf("parse errors %d (want 2), later request answered %v: %v", parseErrors, listed, replies)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestEncodeLineMatchesGoSDK(t *testing.T) {
	for _, id := range []any{float64(7), "a<b>&c"} {
		jid, err := jsonrpc.MakeID(id)
		if err != nil {
			t.Fatal(err)
		}
		resp := &jsonrpc.Response{ID: jid, Result: json.RawMessage(`{"text":"<x> & y","n":1}`)}
		want, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeLine(resp)
		if err != nil || string(got) != string(want)+"\n" {
			t.Errorf("encodeLine = %q, %v; want %q", got, err, want)
		}
	}
}
