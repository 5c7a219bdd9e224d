package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/iota-uz/repl-mcp/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is the MCP connection to a stdio peer: newline-delimited JSON-RPC
// over the pipes of a child a guardian owns. It stands in for go-sdk's IOTransport,
// which costs every call more than the call's own work: it reads each message on a
// goroutine of its own and hands it over to jsonrpc2's reader, then decodes it twice
// more (as a batch, then as a message), each time with a decoder that allocates a
// 32 KiB buffer (in the profile of a cell's mcp.call echo, a tenth of the server's
// time and most of its garbage). Here jsonrpc2's reader reads the pipe itself, and a
// response, the one message every call gets back, is decoded once with
// encoding/json; anything else goes through go-sdk's own decoder, so what it accepts
// and how it fails stay go-sdk's.
//
// The framing is the MCP stdio transport's, as the reference SDKs read it: one
// message a line, blank lines skipped, a line over peerLineLimit (its newline
// included) an error that ends the connection, as any malformed line does. go-sdk
// also accepted one message spread over several lines, which MCP forbids.
type stdioTransport struct {
	out io.ReadCloser  // the child's stdout
	in  io.WriteCloser // the child's stdin
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	return &stdioConn{
		r:      bufio.NewReaderSize(t.out, 64<<10),
		out:    t.out,
		in:     t.in,
		closed: make(chan struct{}),
	}, nil
}

// stdioConn is one connection. Read is called by jsonrpc2's one reader goroutine;
// Write by any goroutine; Close by any, at any time, and it unblocks a Read.
type stdioConn struct {
	r     *bufio.Reader
	out   io.Closer
	in    io.WriteCloser
	queue []jsonrpc.Message // the rest of a batch, for the next Reads

	writeMu sync.Mutex

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// errPeerFrame is a line from a peer over peerLineLimit.
var errPeerFrame = errors.New(msgPeerFrameTooLarge)

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue = c.queue[1:]
		return msg, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			select {
			case <-c.closed:
				return nil, io.EOF // closed under a blocked read, as go-sdk reports it
			default:
			}
			if errors.Is(err, os.ErrClosed) {
				return nil, io.EOF
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		msgs, err := decodePeerLine(line)
		if err != nil {
			return nil, err
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// readLine reads one line without its newline; a last line without one counts.
func (c *stdioConn) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		if len(line)+len(chunk) > peerLineLimit {
			return nil, errPeerFrame
		}
		if err == nil && line == nil {
			return chunk[:len(chunk)-1], nil // the common case: the line is in the buffer
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		}
		return nil, err
	}
}

// decodePeerLine decodes one line: a response with a result by encoding/json, a
// batch element by element, anything else as go-sdk decodes it. A line that is not
// one JSON value is an error (go-sdk's decoder would take the first value of it).
func decodePeerLine(line []byte) ([]jsonrpc.Message, error) {
	if resp, ok := decodeResult(line); ok {
		return []jsonrpc.Message{resp}, nil
	}
	if !json.Valid(line) {
		return nil, errors.New("invalid JSON-RPC message from the MCP server: not one JSON value")
	}
	if line[0] != '[' {
		// go-sdk's decoder may keep parts of what it decodes: not the read buffer.
		msg, err := decodePeerMessage(bytes.Clone(line))
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{msg}, nil
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(line, &batch); err != nil {
		return nil, err
	}
	if len(batch) == 0 {
		return nil, errors.New("invalid JSON-RPC message from the MCP server: empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(batch))
	for _, raw := range batch {
		msg, err := decodePeerMessage(raw)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// decodePeerMessage decodes one message as go-sdk does, except a response nested
// deeper than go-sdk decodes: that becomes an error response to its request
// (codeReplyTooDeep), so that one reply fails its own call only, where go-sdk's
// refusal would end the connection and every call on it.
func decodePeerMessage(raw []byte) (jsonrpc.Message, error) {
	if !jsonscan.Shallow(raw) && nestingDepth(raw) > peerMaxDepth {
		if id, ok := responseID(raw); ok {
			return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeReplyTooDeep, Message: fmt.Sprintf(msgReplyTooDeep, peerMaxDepth)}}, nil
		}
	}
	return jsonrpc.DecodeMessage(raw)
}

// codeReplyTooDeep marks the error response decodePeerMessage makes of a reply too
// deep to decode; it never comes from a peer (JSON-RPC reserves -32000 to -32099
// for implementations, and go-sdk uses none below -32050).
const codeReplyTooDeep = -32097

// nestingDepth is how deep the objects and arrays of valid JSON data nest.
func nestingDepth(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// responseID is the id of a response (an object with an id, a result or an error,
// and no method), read from its top level only.
func responseID(raw []byte) (jsonrpc.ID, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return jsonrpc.ID{}, false
	}
	var rawID []byte
	answer, method := false, false
	jsonscan.Members(raw, func(key, value []byte) bool {
		switch name, _ := jsonscan.PlainString(key); name {
		case "id":
			rawID = value
		case "result", "error":
			answer = true
		case "method":
			method = true
		}
		return true
	})
	if !answer || method || len(rawID) == 0 {
		return jsonrpc.ID{}, false
	}
	var id any
	if err := json.Unmarshal(rawID, &id); err != nil {
		return jsonrpc.ID{}, false
	}
	jid, err := jsonrpc.MakeID(id)
	return jid, err == nil
}

// decodeResult decodes a successful response with exactly go-sdk's keys
// ("jsonrpc": "2.0", a number or a plain string "id", an object "result", each
// once, spelled without escapes) into the Response go-sdk's decoder would make, or
// says no. It walks the line's top-level members rather than decoding them: most
// of the time go-sdk's decoder and a map of raw values took was spent allocating.
func decodeResult(line []byte) (*jsonrpc.Response, bool) {
	if line[0] != '{' || !jsonscan.Shallow(line) || !json.Valid(line) {
		return nil, false
	}
	var version, rawID, result []byte
	ok := true
	jsonscan.Members(line, func(key, value []byte) bool {
		var slot *[]byte
		switch string(key) {
		case `"jsonrpc"`:
			slot = &version
		case `"id"`:
			slot = &rawID
		case `"result"`:
			slot = &result
		}
		if slot == nil || *slot != nil {
			ok = false // another member, or one given twice: go-sdk's to judge
			return false
		}
		*slot = value
		return true
	})
	if !ok || string(version) != `"2.0"` || len(rawID) == 0 || len(result) == 0 || result[0] != '{' {
		return nil, false
	}
	var id any
	switch c := rawID[0]; {
	case c == '-' || '0' <= c && c <= '9':
		// go-sdk's decoder makes a float64 of a number id, as encoding/json does.
		f, err := strconv.ParseFloat(string(rawID), 64)
		if err != nil {
			return nil, false
		}
		id = f
	case c == '"':
		plain, ok := jsonscan.PlainString(rawID)
		if !ok {
			return nil, false
		}
		id = plain
	default:
		return nil, false
	}
	jid, err := jsonrpc.MakeID(id)
	if err != nil {
		return nil, false
	}
	// The line is the read buffer's: the result must outlive it.
	return &jsonrpc.Response{ID: jid, Result: bytes.Clone(result)}, true
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encodePeerMessage(msg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.in.Write(data)
	return err
}

// encodePeerMessage encodes msg as one line. A request (a call or a notification)
// is assembled around its params, which go-sdk has just encoded compactly (with
// encoding/json, newline trimmed): encoding the message again would scan the
// arguments once more, and they reach 256 KiB. Anything else, and params with a
// line break in them, are encoded by go-sdk.
func encodePeerMessage(msg jsonrpc.Message) ([]byte, error) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || bytes.ContainsAny(req.Params, "\r\n") {
		data, err := jsonrpc.EncodeMessage(msg)
		return append(data, '\n'), err
	}
	method, err := json.Marshal(req.Method)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(req.Params)+len(method)+64)
	line = append(line, `{"jsonrpc":"2.0"`...)
	if req.ID.IsValid() {
		line = append(line, `,"id":`...)
		switch id := req.ID.Raw().(type) {
		case int64:
			line = strconv.AppendInt(line, id, 10)
		case string:
			quoted, err := json.Marshal(id)
			if err != nil {
				return nil, err
			}
			line = append(line, quoted...)
		default:
			data, err := jsonrpc.EncodeMessage(msg)
			return append(data, '\n'), err
		}
	}
	line = append(line, `,"method":`...)
	line = append(line, method...)
	if len(req.Params) > 0 {
		line = append(line, `,"params":`...)
		line = append(line, req.Params...)
	}
	return append(line, '}', '\n'), nil
}

// Close closes both pipes; a Read blocked on the child's stdout returns io.EOF.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.out.Close(), c.in.Close())
	})
	return c.closeErr
}
