// Package mcpfixture is a downstream MCP server for tests: the test binary re-runs
// itself as this server so that broker tests talk to a real MCP peer over real stdio.
// Its catalogue spans two pages (echo, multi, fail, then slow_write, collision,
// native_hold), like the reference's fixture.
package mcpfixture

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// args are every tool's optional arguments.
type args struct {
	Text    string  `json:"text,omitempty"`
	Marker  string  `json:"marker,omitempty"`
	Timeout float64 `json:"timeout,omitempty"`
	Server  string  `json:"server,omitempty"`
	Tool    string  `json:"tool,omitempty"`
}

const schema = `{"type":"object","additionalProperties":false,"properties":{
 "text":{"type":"string"},"marker":{"type":"string"},"timeout":{"type":"number"},
 "server":{"type":"string"},"tool":{"type":"string"}}}`

// Main serves the fixture over stdin and stdout until stdin ends.
func Main() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "repl-mcp-fixture", Version: "1"}, &mcp.ServerOptions{PageSize: 3})
	add := func(name string, h func(context.Context, args) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, Description: name + " (fixture)", InputSchema: json.RawMessage(schema)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var a args
				if len(req.Params.Arguments) > 0 {
					json.Unmarshal(req.Params.Arguments, &a)
				}
				return h(ctx, a), nil
			})
	}
	add("echo", func(_ context.Context, a args) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}, StructuredContent: map[string]any{"text": a.Text}}
	})
	add("multi", func(_ context.Context, a args) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "first"}, &mcp.TextContent{Text: "second"}}}
	})
	add("fail", func(_ context.Context, a args) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad arguments"}}}
	})
	add("slow_write", func(ctx context.Context, a args) *mcp.CallToolResult {
		wait := 2 * time.Second
		if a.Timeout > 0 {
			wait = time.Duration(a.Timeout * float64(time.Second))
		}
		select {
		case <-ctx.Done():
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "cancelled"}}}
		case <-time.After(wait):
		}
		if a.Marker != "" {
			os.WriteFile(a.Marker, []byte("written"), 0o644)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote"}}}
	})
	add("collision", func(_ context.Context, a args) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("server=%s tool=%s", a.Server, a.Tool)}}}
	})
	add("native_hold", func(_ context.Context, a args) *mcp.CallToolResult {
		if a.Marker != "" {
			os.WriteFile(a.Marker, []byte(fmt.Sprint(os.Getpid())), 0o644)
		}
		time.Sleep(8 * time.Second) // does not watch for cancellation, like C code
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}
