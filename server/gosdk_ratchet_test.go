package server

// The go-sdk ratchet: each test here pins one behaviour of go-sdk that repl-mcp
// works around (docs/go-sdk-patches.md). It drives go-sdk alone, never our
// workaround, and fails when go-sdk stops behaving that way: then the entry it
// names is to be revisited, and the workaround may go.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/server/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const goSDKModule = "github.com/modelcontextprotocol/go-sdk"

// ratchetGoSDKVersion is the go-sdk version docs/go-sdk-patches.md was checked against.
const ratchetGoSDKVersion = "v1.8.0"

// upstreamChanged is the failure message of a ratchet test: which entry to revisit.
func upstreamChanged(t *testing.T, entry, what string) {
	t.Helper()
	t.Errorf("go-sdk changed: %s. Revisit docs/go-sdk-patches.md, entry %q: the workaround it lists may now go (or must change)", what, entry)
}

// goSDK asks the go command for a field of the go-sdk module in use ({{.Dir}}, {{.Version}}).
func goSDK(t *testing.T, field string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", field, goSDKModule).Output()
	if err != nil {
		t.Fatalf("go list -m -f %s %s: %v", field, goSDKModule, err)
	}
	return strings.TrimSpace(string(out))
}

// TestGoSDKVersionIsTheOneChecked: a go-sdk upgrade must re-check every entry.
func TestGoSDKVersionIsTheOneChecked(t *testing.T) {
	if v := goSDK(t, "{{.Version}}"); v != ratchetGoSDKVersion {
		t.Errorf("go-sdk is %s, docs/go-sdk-patches.md was checked against %s: run the ratchet "+
			"(go test -run GoSDK ./server/), revisit every entry, then update the version in the doc and in ratchetGoSDKVersion",
			v, ratchetGoSDKVersion)
	}
}

// ratchetServer is a bare go-sdk server (tools capability only, as ours) with a
// tool "hold" that reports its call and returns once its context ends or release
// closes, and a tool "wrapped" that returns a wrapped *jsonrpc.Error.
type ratchetServer struct {
	*mcp.Server
	started chan *mcp.CallToolRequest // one per call of hold, with its context in holdCtx
	holdCtx chan context.Context
	release chan struct{}
}

func newRatchetServer(logger *slog.Logger) *ratchetServer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rs := &ratchetServer{started: make(chan *mcp.CallToolRequest, 4), holdCtx: make(chan context.Context, 4), release: make(chan struct{})}
	rs.Server = mcp.NewServer(&mcp.Implementation{Name: "ratchet", Version: "1"}, &mcp.ServerOptions{
		Logger:       logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	schema := json.RawMessage(`{"type":"object"}`)
	rs.AddTool(&mcp.Tool{Name: "hold", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rs.holdCtx <- ctx
		rs.started <- req
		select {
		case <-ctx.Done():
		case <-rs.release:
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "computed"}}}, nil
	})
	rs.AddTool(&mcp.Tool{Name: "plain", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("plain failure")
	})
	mcp.AddTool(rs.Server, &mcp.Tool{Name: "wrapped"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("context: %w", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"})
	})
	rs.AddTool(&mcp.Tool{Name: "b_second", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	rs.AddTool(&mcp.Tool{Name: "a_third", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	return rs
}

// eofReader is stdin that reports when go-sdk has read its end.
type eofReader struct {
	io.ReadCloser
	once sync.Once
	eof  chan struct{}
}

func (r *eofReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		r.once.Do(func() { close(r.eof) })
	}
	return n, err
}

// rawStdio is a go-sdk server over its own IOTransport, driven line by line.
type rawStdio struct {
	t     *testing.T
	stdin *io.PipeWriter
	eof   chan struct{}
	lines chan map[string]any // every line the server wrote, decoded
	run   chan error          // Run's result
}

func serveRawStdio(t *testing.T, s *mcp.Server) *rawStdio {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rawStdio{t: t, stdin: inW, eof: make(chan struct{}), lines: make(chan map[string]any, 64), run: make(chan error, 1)}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				r.lines <- m
			}
		}
	}()
	go func() {
		r.run <- s.Run(t.Context(), &mcp.IOTransport{Reader: &eofReader{ReadCloser: inR, eof: r.eof}, Writer: outW})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return r
}

func (r *rawStdio) send(lines ...string) {
	r.t.Helper()
	if err := r.trySend(lines...); err != nil {
		r.t.Fatalf("write to go-sdk's stdin: %v", err)
	}
}

// trySend writes lines to go-sdk's stdin; an error says go-sdk closed it.
func (r *rawStdio) trySend(lines ...string) error {
	_, err := io.WriteString(r.stdin, strings.Join(lines, "\n")+"\n")
	return err
}

// reply waits for the reply to id, or for the output to end (nil).
func (r *rawStdio) reply(id float64) map[string]any {
	r.t.Helper()
	timeout := time.After(wait(r.t, 10*time.Second))
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				return nil
			}
			if got, _ := m["id"].(float64); got == id {
				return m
			}
		case <-timeout:
			r.t.Fatalf("no reply to id %v and go-sdk's output did not end", id)
		}
	}
}

const ratchetInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
const ratchetInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// TestGoSDKStdioDropsRepliesAfterEOF: stdin's EOF cancels the calls in flight,
// and the reply a call computes after it is not written.
func TestGoSDKStdioDropsRepliesAfterEOF(t *testing.T) {
	const entry = "stdio transport"
	rs := newRatchetServer(nil)
	r := serveRawStdio(t, rs.Server)
	r.send(ratchetInit, ratchetInitialized)
	r.reply(1)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
	handlerCtx := <-rs.holdCtx
	<-rs.started
	r.stdin.Close()
	select {
	case <-handlerCtx.Done(): // hold returns its result now
	case <-time.After(wait(t, 5*time.Second)):
		upstreamChanged(t, entry, "stdin's EOF no longer cancels the calls in flight")
		close(rs.release)
	}
	if m := r.reply(2); m != nil {
		upstreamChanged(t, entry, "a reply computed after stdin's EOF was written: "+fmt.Sprint(m))
	}
}

// TestGoSDKStdioEndsAtABadLine: a line that is not JSON ends the connection.
func TestGoSDKStdioEndsAtABadLine(t *testing.T) {
	r := serveRawStdio(t, newRatchetServer(nil).Server)
	r.send(ratchetInit, ratchetInitialized)
	r.reply(1)
	// go-sdk may close its stdin before it reads the request: that too is the end.
	r.trySend("this is not json", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := r.reply(3); m != nil {
		upstreamChanged(t, "stdio transport", "the request after a malformed line was answered")
		return
	}
	select {
	case err := <-r.run:
		if err == nil {
			t.Errorf("Run ended at a malformed line without an error")
		}
	case <-time.After(wait(t, 10*time.Second)):
		t.Fatal("go-sdk's output ended but Run did not return")
	}
}

// TestGoSDKSecondInitializeIsAPlainError: a second initialize is refused with an
// error that is not a *jsonrpc.Error, which goes out with code 0.
func TestGoSDKSecondInitializeIsAPlainError(t *testing.T) {
	rs := newRatchetServer(nil)
	var seen error
	rs.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "initialize" && err != nil {
				seen = err
			}
			return res, err
		}
	})
	r := serveRawStdio(t, rs.Server)
	r.send(ratchetInit, ratchetInitialized)
	r.reply(1)
	r.send(strings.Replace(ratchetInit, `"id":1`, `"id":2`, 1))
	m := r.reply(2)
	var rpcErr *jsonrpc.Error
	errObj, _ := m["error"].(map[string]any)
	switch {
	case errObj == nil:
		upstreamChanged(t, "second initialize", "a second initialize was not refused: "+fmt.Sprint(m))
	case errors.As(seen, &rpcErr) || errObj["code"] != float64(0):
		upstreamChanged(t, "second initialize", fmt.Sprintf("a second initialize is refused with code %v (%T)", errObj["code"], seen))
	}
}

// TestGoSDKIDsAreNotKeptAsSent: go-sdk holds an id as an int64 or a string (it
// writes 9007199254740993 back as 9007199254740992, 1.5 as 1, "a\u0062" as "ab")
// and a progress token or a cancelled requestId as a float64.
func TestGoSDKIDsAreNotKeptAsSent(t *testing.T) {
	const entry = "ids as sent"
	for _, id := range []string{`9007199254740993`, `1.5`, `"a\u0062"`} {
		line := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
		msg, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			upstreamChanged(t, entry, "the id "+id+" is now refused: "+err.Error())
			continue
		}
		out, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatalf("encode %s: %v", line, err)
		}
		if bytes.Contains(out, []byte(`"id":`+id)) {
			upstreamChanged(t, entry, "the id "+id+" comes back as sent")
		}
	}
	msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":null,"method":"ping"}`))
	if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || req.ID.IsValid() {
		upstreamChanged(t, entry, fmt.Sprintf("a null id is no longer read as a notification (%v, %T)", err, msg))
	}
	var params mcp.CallToolParams
	if err := json.Unmarshal([]byte(`{"name":"x","_meta":{"progressToken":9007199254740993}}`), &params); err != nil {
		t.Fatal(err)
	}
	if tok, ok := params.GetProgressToken().(float64); !ok || tok != 9007199254740992 {
		upstreamChanged(t, entry, fmt.Sprintf("a progress token is held as %T %v", params.GetProgressToken(), params.GetProgressToken()))
	}
	var cancelled mcp.CancelledParams
	if err := json.Unmarshal([]byte(`{"requestId":7}`), &cancelled); err != nil {
		t.Fatal(err)
	}
	if _, ok := cancelled.RequestID.(float64); !ok {
		upstreamChanged(t, entry, fmt.Sprintf("a cancelled requestId is held as %T", cancelled.RequestID))
	}
}

// connectInMemory connects a go-sdk client to s in process.
func connectInMemory(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestGoSDKSortsToolsByName: tools/list is in name order, not registration order.
func TestGoSDKSortsToolsByName(t *testing.T) {
	cs := connectInMemory(t, newRatchetServer(nil).Server)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "a_third,b_second,hold,plain,wrapped" {
		upstreamChanged(t, "tool order", "tools/list lists "+got+" (registered hold,plain,wrapped,b_second,a_third)")
	}
}

// TestGoSDKAnswersUndeclaredCapabilities: prompts/list and resources/list are
// answered though only tools is declared.
func TestGoSDKAnswersUndeclaredCapabilities(t *testing.T) {
	cs := connectInMemory(t, newRatchetServer(nil).Server)
	if _, err := cs.ListPrompts(t.Context(), nil); err != nil {
		upstreamChanged(t, "undeclared capabilities", "prompts/list without the prompts capability is refused: "+err.Error())
	}
	if _, err := cs.ListResources(t.Context(), nil); err != nil {
		upstreamChanged(t, "undeclared capabilities", "resources/list without the resources capability is refused: "+err.Error())
	}
}

// TestGoSDKHasNoTasks: go-sdk knows no method of the tasks extension; it answers
// tasks/get as a method it does not have, before any middleware sees it.
func TestGoSDKHasNoTasks(t *testing.T) {
	r := serveRawStdio(t, newRatchetServer(nil).Server)
	r.send(ratchetInit, ratchetInitialized, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t"}}`)
	reply := r.reply(2)
	if e, _ := reply["error"].(map[string]any); e == nil || e["code"] != float64(jsonrpc.CodeMethodNotFound) {
		upstreamChanged(t, "tasks", fmt.Sprintf("tasks/get is answered %v", reply))
	}
}

// TestGoSDKUnknownToolError: an unknown tool is a *jsonrpc.Error whose message
// starts "unknown tool" (the prefix unknownToolMessage rewords).
func TestGoSDKUnknownToolError(t *testing.T) {
	rs := newRatchetServer(nil)
	var seen error
	rs.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/call" {
				seen = err
			}
			return res, err
		}
	})
	cs := connectInMemory(t, rs.Server)
	cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"})
	var rpcErr *jsonrpc.Error
	if !errors.As(seen, &rpcErr) || !strings.HasPrefix(rpcErr.Message, `unknown tool "nope"`) {
		upstreamChanged(t, "unknown tool wording", fmt.Sprintf("an unknown tool is now %T %v", seen, seen))
	}
}

// TestGoSDKToolHandlerErrors: a typed handler's (mcp.AddTool) error is a protocol
// error only as an unwrapped *jsonrpc.Error, a wrapped one becomes an isError
// result; a raw handler's (Server.AddTool, ours) plain error becomes a JSON-RPC
// error with code 0.
func TestGoSDKToolHandlerErrors(t *testing.T) {
	const entry = "tool handler errors"
	cs := connectInMemory(t, newRatchetServer(nil).Server)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "wrapped"})
	if err != nil || res == nil || !res.IsError {
		upstreamChanged(t, entry, fmt.Sprintf("a typed handler's wrapped *jsonrpc.Error is now (%v, %v)", res, err))
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "plain"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != 0 {
		upstreamChanged(t, entry, fmt.Sprintf("a raw handler's plain error is now (%v, %v)", res, err))
	}
}

// TestGoSDKOmitsFalseIsError: a successful CallToolResult encodes no isError.
func TestGoSDKOmitsFalseIsError(t *testing.T) {
	out, err := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(`"isError"`)) {
		upstreamChanged(t, "isError on every result", "a successful result now encodes isError: "+string(out))
	}
}

// recordingHandler keeps the level of every record logged.
type recordingHandler struct {
	mu     sync.Mutex
	errors []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		h.errors = append(h.errors, r.Message)
		h.mu.Unlock()
	}
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// TestGoSDKLogsShutdownAsError: ending Run by its context logs an error.
func TestGoSDKLogsShutdownAsError(t *testing.T) {
	rec := &recordingHandler{}
	rs := newRatchetServer(slog.New(rec))
	ctx, cancel := context.WithCancel(t.Context())
	st, ct := mcp.NewInMemoryTransports()
	run := make(chan error, 1)
	go func() { run <- rs.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cancel()
	select {
	case <-run:
	case <-time.After(wait(t, 10*time.Second)):
		t.Fatal("Run did not return after its context ended")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.errors, "server run cancelled") {
		upstreamChanged(t, "shutdown logged as an error", fmt.Sprintf("a cancelled Run logged errors %q, not \"server run cancelled\"", rec.errors))
	}
}

// TestGoSDKCancelsHandlersFromAGoroutine: notifications/cancelled cancels the
// call from a goroutine of its own, so a request read after it may be handled
// before the cancelled call's context ends. No test can see that order reliably,
// so this one reads the line of go-sdk's source that does it.
func TestGoSDKCancelsHandlersFromAGoroutine(t *testing.T) {
	if !goSDKSourceHas(t, "mcp/transport.go", "go c.conn.Cancel(id)") {
		upstreamChanged(t, "cancel from a goroutine", "mcp/transport.go's canceller no longer runs `go c.conn.Cancel(id)`")
	}
}

// postMCP posts one JSON-RPC message to a go-sdk Streamable HTTP handler and
// returns the decoded reply (JSON or the first SSE data line) and its session id.
func postMCP(ctx context.Context, url, session, body string) (map[string]any, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Ratchet-Probe", "seen")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if i := bytes.Index(data, []byte("data: ")); i >= 0 {
		data = data[i+len("data: "):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	var m map[string]any
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, "", fmt.Errorf("reply to %.60s is not JSON (status %d): %q", body, resp.StatusCode, data)
		}
	}
	return m, resp.Header.Get("Mcp-Session-Id"), nil
}

// TestGoSDKStatefulHTTPRefuses20260728: a stateful handler answers an
// initialize asking for 2026-07-28 with 2025-11-25.
func TestGoSDKStatefulHTTPRefuses20260728(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRatchetServer(nil).Server }, nil))
	defer srv.Close()
	m, _, err := postMCP(t.Context(), srv.URL, "", strings.Replace(ratchetInit, "2025-11-25", transport.StatelessProtocol, 1))
	if err != nil {
		t.Fatal(err)
	}
	result, _ := m["result"].(map[string]any)
	if v := result["protocolVersion"]; v != "2025-11-25" {
		upstreamChanged(t, "two HTTP handlers", fmt.Sprintf("a stateful initialize for %s is answered with protocol %v", transport.StatelessProtocol, v))
	}
}

// TestGoSDKStatefulHTTPHandlerOutlivesItsRequest: a tool handler on a stateful
// session gets the request's headers but a context that does not end when the
// HTTP request does.
func TestGoSDKStatefulHTTPHandlerOutlivesItsRequest(t *testing.T) {
	const entry = "HTTP hang-up cancels the call"
	rs := newRatchetServer(nil)
	defer close(rs.release)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return rs.Server }, nil)
	callServed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			close(callServed)
		}
	}))
	defer srv.Close()
	_, session, err := postMCP(t.Context(), srv.URL, "", ratchetInit)
	if err != nil || session == "" {
		t.Fatalf("initialize: session %q, %v", session, err)
	}
	if _, _, err := postMCP(t.Context(), srv.URL, session, ratchetInitialized); err != nil {
		t.Fatal(err)
	}
	callCtx, hangUp := context.WithCancel(t.Context())
	go postMCP(callCtx, srv.URL, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
	var handlerCtx context.Context
	select {
	case handlerCtx = <-rs.holdCtx:
	case <-time.After(wait(t, 10*time.Second)):
		t.Fatal("the tool was not called")
	}
	if req := <-rs.started; req.Extra == nil || req.Extra.Header.Get("X-Ratchet-Probe") != "seen" {
		upstreamChanged(t, entry, "a tool handler no longer gets the HTTP request's headers")
	}
	hangUp()
	select {
	case <-callServed:
	case <-time.After(wait(t, 10*time.Second)):
		t.Fatal("go-sdk's handler did not return after the client hung up")
	}
	if handlerCtx.Err() != nil {
		upstreamChanged(t, entry, "a stateful call's context ended with its HTTP request")
	}
}

// TestGoSDKSessionTimeoutIgnoresGETStreams: SessionTimeout closes a session whose
// client holds its GET stream open, counting only POSTs as use.
func TestGoSDKSessionTimeoutIgnoresGETStreams(t *testing.T) {
	// The GET must reach the session before the timeout first expires: a longer
	// timeout is tried when the machine was too slow for a shorter one.
	for _, timeout := range []time.Duration{200 * time.Millisecond, time.Second, 4 * time.Second} {
		if getStreamOutlivedBy(t, timeout) {
			return
		}
	}
	t.Fatal("the GET stream never reached its session before SessionTimeout closed it")
}

// getStreamOutlivedBy opens a session with SessionTimeout timeout and a GET
// stream on it, and reports whether the stream opened (then it must end when
// the session times out).
func getStreamOutlivedBy(t *testing.T, timeout time.Duration) bool {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRatchetServer(nil).Server },
		&mcp.StreamableHTTPOptions{SessionTimeout: timeout}))
	defer srv.Close()
	_, session, err := postMCP(t.Context(), srv.URL, "", ratchetInit)
	if err != nil || session == "" {
		t.Fatalf("initialize: session %q, %v", session, err)
	}
	if _, _, err := postMCP(t.Context(), srv.URL, session, ratchetInitialized); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait(t, 10*time.Second))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	io.Copy(io.Discard, resp.Body) // ends when the session closes, or at ctx's bound
	if ctx.Err() != nil {
		upstreamChanged(t, "MCP session idle timeout", "SessionTimeout no longer closes a session whose GET stream is open")
	}
	return true
}

// goSDKSourceHas reports whether a file of the go-sdk module in use holds text:
// for behaviour no test can observe reliably (an order of goroutines, a default
// that only costs time).
func goSDKSourceHas(t *testing.T, file, text string) bool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(goSDK(t, "{{.Dir}}"), filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(src, []byte(text))
}

// TestGoSDKCommandTransportWaitsBeforeSIGTERM: CommandTransport.Close closes
// stdin, then waits 5 s by default before it sends SIGTERM.
func TestGoSDKCommandTransportWaitsBeforeSIGTERM(t *testing.T) {
	if !goSDKSourceHas(t, "mcp/cmd.go", "defaultTerminateDuration = 5 * time.Second") {
		upstreamChanged(t, "CommandTransport's close", "mcp/cmd.go's defaultTerminateDuration is no longer 5 s")
	}
}

// TestGoSDKUndeliverableHTTPRequestIsJSONRPCError: a call on a Streamable HTTP
// session whose server went away fails with JSON-RPC error -32005, which no
// server sent.
func TestGoSDKUndeliverableHTTPRequestIsJSONRPCError(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRatchetServer(nil).Server }, nil))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	srv.CloseClientConnections()
	srv.Close()
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "b_second"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32005 {
		upstreamChanged(t, "undeliverable HTTP requests", fmt.Sprintf("a call to a server that went away fails with %T %v", err, err))
	}
}

// TestGoSDKRefusesForeignHostButKeepsTheConnection: go-sdk answers a
// non-loopback Host on a loopback connection with 403 and keeps the connection.
func TestGoSDKRefusesForeignHostButKeepsTheConnection(t *testing.T) {
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRatchetServer(nil).Server }, nil))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(ratchetInit))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Close {
		upstreamChanged(t, "Host header", fmt.Sprintf("a foreign Host on a loopback connection is answered %d, connection close %v", resp.StatusCode, resp.Close))
	}
}

// TestGoSDKPatchesDocMatchesTheRatchet: every ratchet test is named in
// docs/go-sdk-patches.md and every entry a test names is a heading there.
func TestGoSDKPatchesDocMatchesTheRatchet(t *testing.T) {
	doc, err := os.ReadFile("../docs/go-sdk-patches.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("gosdk_ratchet_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^func (TestGoSDK\w+)`).FindAllSubmatch(src, -1) {
		if name := string(m[1]); name != "TestGoSDKPatchesDocMatchesTheRatchet" && !bytes.Contains(doc, []byte("`"+name+"`")) {
			t.Errorf("docs/go-sdk-patches.md does not name %s", name)
		}
	}
	// Split so that the pattern does not match its own line.
	quoted := `"([^"]+)"`
	entries := regexp.MustCompile(`upstreamChanged\(t, `+quoted+`|const entry = `+quoted).FindAllSubmatch(src, -1)
	if len(entries) < 10 {
		t.Fatalf("only %d entries found in the ratchet's source", len(entries))
	}
	for _, m := range entries {
		entry := string(m[1]) + string(m[2])
		if !bytes.Contains(doc, []byte("\n## "+entry+"\n")) {
			t.Errorf("a ratchet test names entry %q, which docs/go-sdk-patches.md has no heading for", entry)
		}
	}
}
