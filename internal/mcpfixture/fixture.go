package mcpfixture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pageSize splits the nine standard tools into pages of five and four: go-sdk gives
// a page a next cursor only when at least one more tool follows it.
const pageSize = 5

const usage = "usage: mcpfixture [--http URLFILE]"

// config is the fixture's environment, read once when a server is built.
type config struct {
	logPath string // MCPFIXTURE_LOG: append one line per received message
	huge    bool   // MCPFIXTURE_HUGE=1: add the huge tool
}

func configFromEnv() config {
	return config{logPath: os.Getenv("MCPFIXTURE_LOG"), huge: os.Getenv("MCPFIXTURE_HUGE") == "1"}
}

// fixture is one server's state.
type fixture struct {
	rejected atomic.Bool // reject_once has rejected its first call
}

// Main serves the fixture over stdin and stdout until stdin ends, or, given
// --http URLFILE, over Streamable HTTP until SIGINT or SIGTERM. It returns the exit
// status: 0, 1 when serving fails, 2 for unknown arguments.
func Main() int {
	return run(os.Args[1:], os.Stderr)
}

func run(args []string, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		if err := newServer(configFromEnv()).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			return 1
		}
		return 0
	case len(args) == 2 && args[0] == "--http":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := serveHTTP(ctx, args[1], Handler()); err != nil {
			fmt.Fprintf(stderr, "mcpfixture: %v\n", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "mcpfixture: unknown arguments %q; %s\n", args, usage)
		return 2
	}
}

// newServer builds the fixture server that cfg describes.
func newServer(cfg config) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "repl-mcp-fixture", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize})
	if cfg.logPath != "" {
		s.AddReceivingMiddleware(logMessages(cfg.logPath))
	}
	f := &fixture{}
	for _, t := range tools(cfg) {
		s.AddTool(&mcp.Tool{Name: t.name, Description: t.description, InputSchema: objectSchema(t.props...)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return t.call(ctx, f, req.Params.Arguments)
			})
	}
	return s
}

// logMessages appends "<pid> <method>", plus " <tool>" for tools/call, to path for
// every message the server receives, before handling it. The file is opened for
// each line with O_APPEND, so several fixture processes can share one log.
func logMessages(path string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			line := fmt.Sprintf("%d %s", os.Getpid(), method)
			if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
				line += " " + call.Params.Name
			}
			if err := appendLine(path, line); err != nil {
				return nil, fmt.Errorf("mcpfixture: logging %s: %w", method, err)
			}
			return next(ctx, method, req)
		}
	}
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// objectSchema is the input schema of a tool whose arguments are props, each typed
// by its name.
func objectSchema(props ...string) json.RawMessage {
	properties := map[string]any{}
	for _, p := range props {
		properties[p] = map[string]string{"type": propType(p)}
	}
	raw, err := json.Marshal(map[string]any{"type": "object", "additionalProperties": false, "properties": properties})
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return raw
}

func propType(prop string) string {
	switch prop {
	case "timeout":
		return "number"
	case "size":
		return "integer"
	case "arguments":
		return "object"
	default: // text, marker, server, tool
		return "string"
	}
}
