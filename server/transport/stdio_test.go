package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
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
		got, err := encodeLine(resp, nil)
		if err != nil || string(got) != string(want)+"\n" {
			t.Errorf("encodeLine = %q, %v; want %q", got, err, want)
		}
	}
}

// TestLargeResultWrittenAsEncoded holds the write of a result without a copy (at least
// writeAsIs bytes) to the bytes of go-sdk's encoding, as the copy path is above.
func TestLargeResultWrittenAsEncoded(t *testing.T) {
	in, stdin := io.Pipe()
	t.Cleanup(func() { stdin.Close() })
	out := &lockedBuffer{}
	conn, err := newStdioTransport(in, out, slog.New(slog.DiscardHandler), nil).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i, size := range []int{10, writeAsIs - 100, writeAsIs, 3 * writeAsIs} {
		for _, id := range []any{float64(i), "a<b>&c"} {
			jid, err := jsonrpc.MakeID(id)
			if err != nil {
				t.Fatal(err)
			}
			text, _ := json.Marshal(strings.Repeat("<x> & y ", size/8))
			resp := &jsonrpc.Response{ID: jid, Result: json.RawMessage(`{"text":` + string(text) + `,"n":1}`)}
			line, err := jsonrpc.EncodeMessage(resp)
			if err != nil {
				t.Fatal(err)
			}
			want.Write(line)
			want.WriteByte('\n')
			if err := conn.Write(t.Context(), resp); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := out.String(); got != want.String() {
		t.Errorf("written lines differ from go-sdk's encoding: got %d bytes, want %d", len(got), want.Len())
	}
}

// serveRaw serves the lines of input with s until stdin ends, and returns the id,
// error and progress token of each line written, as raw JSON.
func serveRaw(t *testing.T, s *mcp.Server, input string) []rawReply {
	t.Helper()
	out := &lockedBuffer{}
	transport := newStdioTransport(strings.NewReader(input), out, slog.New(slog.DiscardHandler), nil)
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context(), transport) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not end after stdin EOF")
	}
	var replies []rawReply
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var r rawReply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		replies = append(replies, r)
	}
	return replies
}

type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"params"`
}

// TestIDsComeBackAsSent: every reply carries its request's id byte for byte,
// whatever go-sdk can hold (an integer beyond int64 or beyond 2^53, a fraction,
// -0, an exponent, a string); a call whose id is null, or whose id is still in
// flight, is answered with -32600 instead of silence.
func TestIDsComeBackAsSent(t *testing.T) {
	ids := []string{`12345678901234567890123`, `9007199254740993`, `1.5`, `-0`, `1e2`, `-7`, `"a\u0062"`, `"x"`}
	var input strings.Builder
	input.WriteString(initLine)
	for _, id := range ids {
		input.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}` + "\n")
	}
	// The slow call is still running when the second one with its id arrives.
	input.WriteString(`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"slow","arguments":{}}}` + "\n")
	input.WriteString(`{"jsonrpc":"2.0","id":77,"method":"tools/list"}` + "\n")
	input.WriteString(`{"jsonrpc":"2.0","id":null,"method":"tools/list"}` + "\n")
	replies := serveRaw(t, slowServer(), input.String())

	listed := map[string]int{}
	var duplicate, null, slow bool
	for _, r := range replies {
		switch {
		case r.Error != nil && string(r.ID) == "77":
			duplicate = r.Error.Code == jsonrpc.CodeInvalidRequest && strings.Contains(r.Error.Message, "still in flight")
		case r.Error != nil && string(r.ID) == "null":
			null = r.Error.Code == jsonrpc.CodeInvalidRequest && strings.Contains(r.Error.Message, "null")
		case r.Error != nil:
			t.Errorf("id %s: error %+v", r.ID, r.Error)
		case string(r.ID) == "77":
			slow = strings.Contains(string(r.Result), "done")
		default:
			listed[string(r.ID)]++
		}
	}
	for _, id := range ids {
		if listed[id] != 1 {
			t.Errorf("id %s: %d replies with the id as sent; got ids %v", id, listed[id], listed)
		}
	}
	if !duplicate || !null || !slow {
		var got []string
		for _, r := range replies {
			got = append(got, fmt.Sprintf("id %s error %+v", r.ID, r.Error))
		}
		t.Errorf("duplicate id refused %v, null id refused %v, the first call with the duplicated id answered %v: %s",
			duplicate, null, slow, strings.Join(got, "; "))
	}
}

// TestCancelReachesACallWithAStandInID: notifications/cancelled naming an id that
// go-sdk holds under a stand-in cancels that call.
func TestCancelReachesACallWithAStandInID(t *testing.T) {
	started := make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cancelled"}}}, nil
		})
	inR, inW := io.Pipe()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context(), newStdioTransport(inR, out, slog.New(slog.DiscardHandler), nil)) }()
	io.WriteString(inW, initLine+`{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"block","arguments":{}}}`+"\n")
	select {
	case <-started:
	case <-time.After(testwait.Bound(t, 10*time.Second)):
		t.Fatal("the call never started")
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.5}}`+"\n")
	inW.Close()
	select {
	case <-done:
	case <-time.After(testwait.Bound(t, 15*time.Second)):
		t.Fatalf("the cancelled call never ended: %s", out.String())
	}
}

// TestProgressTokensKeepEveryDigit: a progress token is echoed in notifications as
// the client sent it, an integer beyond 2^53 included.
func TestProgressTokensKeepEveryDigit(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "notify", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, err
		})
	tokens := []string{`12345678901234567890123`, `9007199254740993`, `-9007199254740993`, `42`, `"tok"`}
	var input strings.Builder
	input.WriteString(initLine)
	for i, token := range tokens {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"notify","arguments":{},"_meta":{"progressToken":%s}}}`+"\n", i+10, token)
	}
	echoed := map[string]bool{}
	for _, r := range serveRaw(t, s, input.String()) {
		if r.Method == "notifications/progress" {
			echoed[string(r.Params.ProgressToken)] = true
		}
	}
	for _, token := range tokens {
		if !echoed[token] {
			t.Errorf("token %s not echoed as sent; echoed %v", token, echoed)
		}
	}
}
