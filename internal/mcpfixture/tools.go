package mcpfixture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	bigDefault      = 950_000
	bigMax          = 4_000_000
	hugeDescription = 2_000_000
)

// tool is one fixture tool: its name, description, argument names (see propType)
// and handler, which gets the raw arguments.
type tool struct {
	name, description string
	props             []string
	call              func(context.Context, *fixture, json.RawMessage) (*mcp.CallToolResult, error)
}

// tools is the catalogue cfg selects; the server lists it sorted by name.
func tools(cfg config) []tool {
	ts := []tool{
		{"echo", "Returns text as a text block and as structuredContent.text (fixture).", []string{"text"}, handle(echo)},
		{"multi", "Returns two text blocks (fixture).", nil, handle(multi)},
		{"fail", "Always fails with isError (fixture).", nil, handle(fail)},
		{"slow_write", "Waits timeout seconds, then writes marker unless cancelled (fixture).", []string{"marker", "timeout"}, handle(slowWrite)},
		{"collision", "Echoes parameters named like the Python helper's keywords (fixture).", []string{"server", "tool", "timeout", "arguments"}, handle(collision)},
		{"native_hold", "Writes its pid to marker, then holds 8 s ignoring cancellation (fixture).", []string{"marker"}, handle(nativeHold)},
		{"count", "Counts one effect in marker and returns the new count (fixture).", []string{"marker"}, handle(count)},
		{"big", "Counts an effect in marker, then returns size bytes of text (fixture).", []string{"size", "marker"}, handle(big)},
		{"reject_once", "Rejects its first call with JSON-RPC -32602, then counts effects in marker (fixture).", []string{"marker"}, handle(rejectOnce)},
	}
	if cfg.huge {
		ts = append(ts, tool{"huge", strings.Repeat("h", hugeDescription), nil, handle(huge)})
	}
	return ts
}

// handle decodes a tool's arguments into P, strictly: unknown or mistyped arguments
// are a tool error, as additionalProperties false promises.
func handle[P any](h func(context.Context, *fixture, P) (*mcp.CallToolResult, error)) func(context.Context, *fixture, json.RawMessage) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, f *fixture, raw json.RawMessage) (*mcp.CallToolResult, error) {
		var p P
		if len(raw) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				return toolError(fmt.Sprintf("invalid arguments: %v", err)), nil
			}
		}
		return h(ctx, f, p)
	}
}

func text(blocks ...string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{}}
	for _, b := range blocks {
		res.Content = append(res.Content, &mcp.TextContent{Text: b})
	}
	return res
}

func toolError(msg string) *mcp.CallToolResult {
	res := text(msg)
	res.IsError = true
	return res
}

type (
	noArgs   struct{}
	textArgs struct {
		Text string `json:"text"`
	}
	markerArgs struct {
		Marker string `json:"marker"`
	}
)

func echo(_ context.Context, _ *fixture, a textArgs) (*mcp.CallToolResult, error) {
	res := text(a.Text)
	res.StructuredContent = map[string]any{"text": a.Text}
	return res, nil
}

func multi(context.Context, *fixture, noArgs) (*mcp.CallToolResult, error) {
	return text("first", "second"), nil
}

func fail(context.Context, *fixture, noArgs) (*mcp.CallToolResult, error) {
	return toolError("bad arguments"), nil
}

type slowWriteArgs struct {
	Marker  string   `json:"marker"`
	Timeout *float64 `json:"timeout"`
}

func slowWrite(ctx context.Context, _ *fixture, a slowWriteArgs) (*mcp.CallToolResult, error) {
	wait := 2 * time.Second
	if a.Timeout != nil {
		wait = time.Duration(max(*a.Timeout, 0) * float64(time.Second))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		// The note is the event a test waits for: from here on the marker can never
		// be written, so nobody has to sleep past the timeout to know it was not.
		if a.Marker != "" {
			if err := writeFileAtomic(a.Marker+".cancelled", []byte("cancelled")); err != nil {
				return toolError(err.Error()), nil
			}
		}
		return toolError("cancelled"), nil
	case <-timer.C:
	}
	if a.Marker != "" {
		if err := writeFileAtomic(a.Marker, []byte("written")); err != nil {
			return toolError(err.Error()), nil
		}
	}
	return text("wrote"), nil
}

type collisionArgs struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Timeout   *float64        `json:"timeout"`
	Arguments json.RawMessage `json:"arguments"`
}

func collision(_ context.Context, _ *fixture, a collisionArgs) (*mcp.CallToolResult, error) {
	timeout := ""
	if a.Timeout != nil {
		timeout = strconv.FormatFloat(*a.Timeout, 'f', -1, 64)
	}
	arguments, err := compactSorted(a.Arguments)
	if err != nil {
		return toolError(fmt.Sprintf("invalid arguments: %v", err)), nil
	}
	return text(fmt.Sprintf("server=%s tool=%s timeout=%s arguments=%s", a.Server, a.Tool, timeout, arguments)), nil
}

// compactSorted renders raw as compact JSON with object keys sorted, numbers as
// written and no HTML escaping; absent is "null".
func compactSorted(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "null", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func nativeHold(_ context.Context, _ *fixture, a markerArgs) (*mcp.CallToolResult, error) {
	if a.Marker != "" {
		if err := writeFileAtomic(a.Marker, []byte(strconv.Itoa(os.Getpid()))); err != nil {
			return toolError(err.Error()), nil
		}
	}
	time.Sleep(8 * time.Second) // does not watch for cancellation, like C code
	return text("held"), nil
}

func count(_ context.Context, _ *fixture, a markerArgs) (*mcp.CallToolResult, error) {
	if a.Marker == "" {
		return toolError("count needs a marker"), nil
	}
	n, err := countEffect(a.Marker)
	if err != nil {
		return toolError(err.Error()), nil
	}
	return text(strconv.Itoa(n)), nil
}

type bigArgs struct {
	Size   *int   `json:"size"`
	Marker string `json:"marker"`
}

func big(_ context.Context, _ *fixture, a bigArgs) (*mcp.CallToolResult, error) {
	size := bigDefault
	if a.Size != nil {
		size = *a.Size
	}
	if size < 0 || size > bigMax {
		return toolError(fmt.Sprintf("size %d is outside 0..%d", size, bigMax)), nil
	}
	if a.Marker != "" {
		if _, err := countEffect(a.Marker); err != nil {
			return toolError(err.Error()), nil
		}
	}
	return text(strings.Repeat("x", size)), nil
}

func rejectOnce(_ context.Context, f *fixture, a markerArgs) (*mcp.CallToolResult, error) {
	if f.rejected.CompareAndSwap(false, true) {
		// Unwrapped, so go-sdk sends it as a JSON-RPC error, not an isError result.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "reject_once: the first call is always rejected"}
	}
	if a.Marker != "" {
		if _, err := countEffect(a.Marker); err != nil {
			return toolError(err.Error()), nil
		}
	}
	return text("accepted"), nil
}

func huge(context.Context, *fixture, noArgs) (*mcp.CallToolResult, error) {
	return text("huge"), nil
}
