package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/internal/jsonscan"
	"github.com/iota-uz/repl-mcp/internal/utf8cut"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one JSON-RPC message on stdin and stdout.
const maxLine = 1 << 20

// idPrefix is how much of an over-long line is kept to find the request's id in:
// clients put the id before the params, and an id after the params of a line that
// long cannot be reached without reading all of it.
const idPrefix = 64 << 10

// readChunk is the stdin reader's buffer: how much one read takes, not a bound on a
// line (readLine joins the chunks of a longer one). bufio's default size: a larger
// buffer is zeroed, and so resident, for the whole life of an idle server (64 KiB
// cost 60 KiB of idle RSS), and saves only read calls on lines longer than it.
const readChunk = 4 << 10

// drainLimit bounds how long EOF waits for the last replies once every cell has
// been cancelled; a reply that never comes must not keep the process alive.
const drainLimit = 10 * time.Second

// ServeStdio serves one client over newline-delimited JSON-RPC on in and out until
// the client closes in (every request already read is answered first) or ctx is
// cancelled (SIGTERM, SIGINT). Either way every session is closed before it returns.
func ServeStdio(ctx context.Context, in io.Reader, out io.Writer, host Host) error {
	eof := make(chan struct{})
	transport := newStdioTransport(in, out, host.logger(), func() { close(eof) })
	transport.tasks = host.Tasks
	served := make(chan error, 1)
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	go func() { served <- host.MCP.Run(runCtx, transport) }()

	var err error
	select {
	case err = <-served:
	case <-eof:
		// Answer what was read; cells still running after the grace are cancelled,
		// and their cancelled results are answered too.
		select {
		case err = <-served:
		case <-time.After(eofGrace):
			host.CloseSessions(signalGrace)
			err = <-served
		}
	case <-ctx.Done():
		closed := make(chan struct{})
		go func() { host.CloseSessions(signalGrace); close(closed) }()
		stopRun()
		select {
		case <-served:
		case <-time.After(closeGrace):
		}
		<-closed
		return nil
	}
	host.CloseSessions(signalGrace)
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// stdioTransport is newline-delimited JSON-RPC over a reader and a writer. Unlike
// go-sdk's own stdio transport it answers every request it has read before it
// reports EOF (go-sdk issue #1061 drops them), and a malformed or oversized line
// gets an error reply instead of ending the stream.
type stdioTransport struct {
	in     io.Reader
	out    io.Writer
	logger *slog.Logger
	onEOF  func()
	// tasks, when set, serves the requests of the tasks extension, which go-sdk
	// does not know (Host.Tasks); ctx is the connection's.
	tasks Tasks
}

func newStdioTransport(in io.Reader, out io.Writer, logger *slog.Logger, onEOF func()) *stdioTransport {
	return &stdioTransport{in: in, out: out, logger: logger, onEOF: onEOF}
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := &stdioConn{
		ctx:      ctx,
		tasks:    t.tasks,
		out:      t.out,
		logger:   t.logger,
		messages: make(chan jsonrpc.Message),
		eof:      make(chan struct{}),
		closed:   make(chan struct{}),
		changed:  make(chan struct{}, 1),
		pending:  map[any]bool{},
		ids:      newWireIDs(),
	}
	go c.readLoop(t.in, t.onEOF)
	return c, nil
}

type stdioConn struct {
	ctx    context.Context // the connection's lifetime, for the requests it serves itself
	tasks  Tasks
	out    io.Writer
	logger *slog.Logger

	messages chan jsonrpc.Message
	eof      chan struct{} // closed when stdin has ended
	closed   chan struct{}
	once     sync.Once

	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[any]bool  // ids of requests read and not yet answered
	changed chan struct{} // pulsed when pending shrinks

	ids *wireIDs // ids and progress tokens as the client sent them
}

func (c *stdioConn) SessionID() string { return "" }

// readLoop reads lines until EOF, replying itself to lines that are not messages.
func (c *stdioConn) readLoop(in io.Reader, onEOF func()) {
	defer func() {
		close(c.eof)
		if onEOF != nil {
			onEOF()
		}
	}()
	r := bufio.NewReaderSize(in, readChunk)
	for {
		line, tooLong, err := readLine(r)
		switch {
		case tooLong:
			// Answered with the request's id when its start names one, so the
			// client's request ends instead of waiting for a reply forever.
			c.writeError(idFromPrefix(line), jsonrpc.CodeParseError, msgLineTooLong)
		case len(line) > 0:
			if !c.accept(line) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

const msgLineTooLong = "Message exceeds the 1 MiB line limit; it was discarded and nothing ran. " +
	"Send less per message: write large code to a file and run it with python_execute_file"

// accept decodes one line and hands it to the session; false once the connection
// is closed.
func (c *stdioConn) accept(line []byte) bool {
	msg, rawID, err := decodeLine(line)
	if err != nil {
		// The decoder's message may quote the line; keep the reply short.
		c.writeError(nil, jsonrpc.CodeParseError, "Invalid JSON-RPC message; it was discarded: "+utf8cut.Prefix(err.Error(), 200))
		return true
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if !c.admit(req, rawID) {
			return true
		}
		if c.tasks != nil && req.IsCall() && c.tasks.Owns(req.Method, req.Params) {
			go c.serveTask(req)
			return true
		}
	}
	select {
	case c.messages <- msg:
		return true
	case <-c.closed:
		return false
	}
}

// decodeLine is jsonrpc.DecodeMessage, with the lines clients send most (requests
// and notifications) decoded by encoding/json into go-sdk's own Request: go-sdk's
// decoder allocates a 32 KiB buffer for each of the two passes it makes over every
// message, which made it the largest allocation of a warm cell and most of the
// server's garbage (the profile in docs/perf-notes.md, "A warm trivial cell"). Anything
// else, a response or a line that is not plainly a request, goes through go-sdk's
// decoder, so what it accepts and how it fails are go-sdk's.
//
// rawID is the request's id as sent (nil when it has none), which go-sdk's ID may
// not hold (wireids.go).
func decodeLine(line []byte) (msg jsonrpc.Message, rawID json.RawMessage, err error) {
	if req, rawID, ok := decodeRequest(line); ok {
		return req, rawID, nil
	}
	msg, err = jsonrpc.DecodeMessage(line)
	if _, ok := msg.(*jsonrpc.Request); ok && json.Valid(line) {
		// The member go-sdk read: "id" exactly (its decoder matches keys by case),
		// the last one if there are several.
		jsonscan.Members(line, func(key, value []byte) bool {
			if k, plain := jsonscan.PlainString(key); plain && k == "id" {
				rawID = value
			}
			return true
		})
	}
	return msg, rawID, err
}

// decodeRequest decodes a request with exactly go-sdk's keys ("jsonrpc": "2.0",
// "method", optional "id" and "params", matched case-sensitively), or says no. It
// leaves deep nesting to go-sdk, whose decoder refuses more than 1000 levels: a line
// with more than that many brackets is never decoded here.
func decodeRequest(line []byte) (*jsonrpc.Request, json.RawMessage, bool) {
	if !jsonscan.Shallow(line) {
		return nil, nil, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(line, &fields) != nil {
		return nil, nil, false
	}
	var version, method string
	var rawID any
	for key, value := range fields {
		var err error
		switch key {
		case "jsonrpc":
			err = json.Unmarshal(value, &version)
		case "method":
			err = json.Unmarshal(value, &method)
		case "id":
			err = json.Unmarshal(value, &rawID)
		case "params":
		default:
			return nil, nil, false
		}
		if err != nil {
			return nil, nil, false
		}
	}
	if version != "2.0" || fields["method"] == nil {
		return nil, nil, false
	}
	switch rawID.(type) {
	case nil, float64, string:
	default:
		return nil, nil, false
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, nil, false
	}
	return &jsonrpc.Request{ID: id, Method: method, Params: fields["params"]}, fields["id"], true
}

// admit hands go-sdk a request under the id it can hold (wireids.go), refusing
// with an error reply a call whose id is null or still in flight (a notification
// with a null id is taken as the notification it is); it records
// calls that need a reply, and forgets those the client cancels (a cancelled
// request may get no reply). It reports whether the request goes on to go-sdk.
func (c *stdioConn) admit(req *jsonrpc.Request, rawID json.RawMessage) bool {
	if rawID != nil && !(string(bytes.TrimSpace(rawID)) == "null" && strings.HasPrefix(req.Method, "notifications/")) {
		id, params, err := c.ids.admit(bytes.TrimSpace(rawID), req.Params)
		if err != nil {
			replyID := rawID
			if errors.Is(err, errNullID) {
				replyID = nil
			}
			c.writeError(replyID, jsonrpc.CodeInvalidRequest, err.Error())
			return false
		}
		req.ID, req.Params = id, params
		c.mu.Lock()
		c.pending[req.ID.Raw()] = true
		c.mu.Unlock()
		return true
	}
	if req.Method == "notifications/cancelled" {
		params, id := c.ids.cancelParams(req.Params)
		req.Params = params
		if id.IsValid() {
			c.mu.Lock()
			c.forget(id.Raw())
			c.mu.Unlock()
		}
	}
	return true
}

// serveTask answers a request of the tasks extension itself: go-sdk would answer
// that it does not know the method. The reply goes out as go-sdk's do (Write), so
// its id is the one sent and EOF waits for it.
func (c *stdioConn) serveTask(req *jsonrpc.Request) {
	result, rpcErr := c.tasks.Serve(c.ctx, req.Method, req.Params)
	resp := &jsonrpc.Response{ID: req.ID}
	if rpcErr == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task state could not be encoded: " + err.Error()}
		}
		resp.Result = raw
	}
	if rpcErr != nil {
		resp.Result, resp.Error = nil, rpcErr
	}
	if err := c.Write(c.ctx, resp); err != nil {
		c.logger.Warn("write task reply", "err", err)
	}
}

// forget drops a pending id; c.mu is held.
func (c *stdioConn) forget(id any) {
	if c.pending[id] {
		delete(c.pending, id)
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg := <-c.messages:
		return msg, nil
	case <-c.eof:
		return nil, c.drain(ctx)
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// drain waits until every request read has been answered, then reports EOF.
func (c *stdioConn) drain(ctx context.Context) error {
	limit := time.NewTimer(drainLimit)
	defer limit.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return io.EOF
		}
		select {
		case <-c.changed:
		case <-c.closed:
			return io.EOF
		case <-ctx.Done():
			return ctx.Err()
		case <-limit.C:
			c.logger.Warn("stdin closed with requests still unanswered", "requests", n)
			return io.EOF
		}
	}
}

func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	var rawID json.RawMessage
	switch m := msg.(type) {
	case *jsonrpc.Response:
		rawID = c.ids.answered(m.ID)
	case *jsonrpc.Request:
		if m.Method == "notifications/progress" {
			note := *m
			note.Params = c.ids.progressParams(m.Params)
			msg = &note
		}
	}
	if err := c.writeMessage(msg, rawID); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		c.forget(resp.ID.Raw())
		c.mu.Unlock()
	}
	return nil
}

// writeMessage writes msg as one line. A large result is written as it stands,
// between its envelope's two ends, rather than copied into a line first: the copy
// (a tools/list reply is 44 KiB) would be garbage the size of the reply, resident in
// an idle server until the next collection.
func (c *stdioConn) writeMessage(msg jsonrpc.Message, rawID json.RawMessage) error {
	if resp, ok := assembled(msg); ok && len(resp.Result) >= writeAsIs {
		head, err := resultHead(resp, rawID)
		if err != nil {
			return err
		}
		c.writeMu.Lock()
		defer c.writeMu.Unlock()
		for _, part := range [][]byte{head, resp.Result, lineEnd} {
			if _, err := c.out.Write(part); err != nil {
				return err
			}
		}
		return nil
	}
	data, err := encodeLine(msg, rawID)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

// writeAsIs is the size from which a result is written without a copy: below it one
// write of a copy costs less than three writes.
const writeAsIs = 32 << 10

// lineEnd closes a response assembled around its result.
var lineEnd = []byte("}\n")

func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if len(data) == 0 || data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	_, err := c.out.Write(data)
	return err
}

// encodeLine encodes msg as one line, a response with rawID (the id as the client
// sent it) when it is not nil. A successful response is assembled around its
// result, which go-sdk has just encoded compactly: encoding the message again
// would scan the whole result once more, and results reach hundreds of kilobytes.
func encodeLine(msg jsonrpc.Message, rawID json.RawMessage) ([]byte, error) {
	resp, ok := assembled(msg)
	if !ok {
		data, err := jsonrpc.EncodeMessage(msg)
		if _, isResp := msg.(*jsonrpc.Response); err == nil && isResp && rawID != nil {
			if _, start, end, found := member(data, "id"); found {
				data = splice(data, start, end, rawID)
			}
		}
		return data, err
	}
	head, err := resultHead(resp, rawID)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(head)+len(resp.Result)+len(lineEnd))
	line = append(line, head...)
	line = append(line, resp.Result...)
	return append(line, lineEnd...), nil
}

// assembled returns msg as a response that is written around its result: a success
// with a result and an id.
func assembled(msg jsonrpc.Message) (*jsonrpc.Response, bool) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 || !resp.ID.IsValid() {
		return nil, false
	}
	return resp, true
}

// resultHead is a success response's line up to its result: the envelope with rawID
// (the id as the client sent it) when it is not nil, else the id as go-sdk encodes it.
func resultHead(resp *jsonrpc.Response, rawID json.RawMessage) ([]byte, error) {
	id := rawID
	if id == nil {
		var idBuf bytes.Buffer
		enc := json.NewEncoder(&idBuf)
		enc.SetEscapeHTML(false) // as go-sdk encodes
		if err := enc.Encode(resp.ID.Raw()); err != nil {
			return nil, err
		}
		id = bytes.TrimRight(idBuf.Bytes(), "\n")
	}
	head := make([]byte, 0, len(id)+len(`{"jsonrpc":"2.0","id":,"result":`))
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, id...)
	return append(head, `,"result":`...), nil
}

// writeError replies to a line that could not be read or admitted as a message,
// with id (a string, a json.Number or a json.RawMessage), or null when the line's
// id is unknown.
func (c *stdioConn) writeError(id any, code int64, message string) {
	reply, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": message},
	})
	if err := c.writeLine(reply); err != nil {
		c.logger.Warn("write error reply", "err", err)
	}
}

func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// readLine reads one line without its newline. An over-long line is consumed up to
// its newline, so the stream stays in step, and reported with tooLong set and its
// first idPrefix bytes as line.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(chunk) > maxLine:
			tooLong = true
			if len(line) < idPrefix {
				line = append(line, chunk[:min(len(chunk), idPrefix-len(line))]...)
			}
			line = line[:min(len(line), idPrefix)]
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return line, true, err
		}
		return trimNewline(line), false, err
	}
}

// idFromPrefix finds the top-level "id" member at the start of a JSON-RPC request
// that was cut short: a string, or a number that ends before the cut. Anything else
// (no object, malformed JSON before the id, an id past the cut or of another kind)
// is nil, and the reply's id is null.
func idFromPrefix(prefix []byte) any {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return nil // the object ended without an id
		}
		if key != "id" {
			// Skip the member's value whole; one that runs past the cut ends the search.
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		tok, err = dec.Token()
		// A number that reaches the cut may have lost digits: it must be followed
		// by something still inside the prefix.
		if err != nil || dec.InputOffset() >= int64(len(prefix)) {
			return nil
		}
		switch id := tok.(type) {
		case string, json.Number:
			return id
		}
		return nil
	}
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
