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
	listed, oversizedAnswered := false, false
	for _, r := range replies {
		if e, ok := r["error"].(map[string]any); ok && e["code"].(float64) == -32700 {
			parseErrors++
			// The over-long line's id comes before the cut: its reply carries it.
			oversizedAnswered = oversizedAnswered || r["id"] == float64(9)
			if len(e["message"].(string)) > 400 {
				t.Errorf("parse error echoes the line: %d bytes", len(e["message"].(string)))
			}
		}
		if r["id"] == float64(2) && r["result"] != nil {
			listed = true
		}
	}
	if parseErrors != 2 || !listed || !oversizedAnswered {
		t.Fatalf("parse errors %d (want 2), later request answered %v, over-long line answered with its id %v: %v",
			parseErrors, listed, oversizedAnswered, replies)
	}
}

func TestIDFromPrefix(t *testing.T) {
	pad := strings.Repeat("x", 100)
	for _, c := range []struct {
		prefix string
		want   any
	}{
		{`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"code":"` + pad, "a-1"},
		{`{"id":42,"params":{"code":"` + pad, json.Number("42")},
		{`{"jsonrpc":"2.0","method":"m","params":{"nested":{"id":5},"list":[1,{"id":6}]},"id":7,"x":"` + pad, json.Number("7")},
		{` {"id" : -3 , "p":"` + pad, json.Number("-3")},
		// The number reaches the cut: digits may be missing.
		{`{"jsonrpc":"2.0","id":12`, nil},
		{`{"jsonrpc":"2.0","id":12 `, json.Number("12")},
		// The id comes after the cut, or never.
		{`{"jsonrpc":"2.0","method":"m","params":{"code":"` + pad, nil},
		{`{"jsonrpc":"2.0","method":"m"}`, nil},
		// Not a request object, malformed before the id, or an id of another kind.
		{`[{"id":1}` + pad, nil},
		{`"id"` + pad, nil},
		{`{"jsonrpc":2.0.0,"id":1,` + pad, nil},
		{`{"id":null,` + pad, nil},
		{`{"id":{"n":1},` + pad, nil},
		{`{"id":true,` + pad, nil},
		{``, nil},
	} {
		if got := idFromPrefix([]byte(c.prefix)); got != c.want {
			t.Errorf("idFromPrefix(%.60q) = %#v, want %#v", c.prefix, got, c.want)
		}
	}
}

// TestLineTooLongKeepsPrefix: an over-long line is consumed to its newline, its
// start kept (at most idPrefix bytes), and the next line read whole.
func TestLineTooLongKeepsPrefix(t *testing.T) {
	long := `{"id":"x","p":"` + strings.Repeat("y", maxLine) + "\"}"
	for _, tail := range []string{"\n{\"next\":1}\n", ""} {
		r := bufio.NewReaderSize(strings.NewReader(long+tail), 4096)
		line, tooLong, err := readLine(r)
		if !tooLong || len(line) != idPrefix || !strings.HasPrefix(long, string(line)) {
			t.Fatalf("tail %q: tooLong %v, %d bytes kept (%v), want the line's first %d", tail, tooLong, len(line), err, idPrefix)
		}
		if tail == "" {
			if err == nil {
				t.Fatal("an over-long last line without newline: no EOF")
			}
			continue
		}
		line, tooLong, err = readLine(r)
		if tooLong || string(line) != `{"next":1}` || err != nil {
			t.Fatalf("the line after: %q, tooLong %v, %v", line, tooLong, err)
		}
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
