package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/notebook"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/server/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is what a Server is built from.
type Config struct {
	Version string
	Repl    *repl.Manager
	// Brokers are the downstream brokers the Manager's sessions use (through cellops);
	// health reports the root one. Nil reports a disabled broker.
	Brokers *broker.Set
	// Artifacts is the store the artifact tools read and write, the one the
	// Manager's sessions reach through their repl.Services; nil reports that no
	// store is configured.
	Artifacts *artifacts.Store
	// Notebooks keeps the sessions' records for python_session_export; nil refuses it.
	Notebooks *notebook.Keeper
	// ResultFormat shapes results per client (docs/contract.md §3.4); "" is FormatAuto.
	ResultFormat ResultFormat
	// YieldAfter is yield_after's default for every client (docs/contract.md
	// §5.6); nil leaves it per client: 50 s for the text form's, none for others.
	YieldAfter *time.Duration
	// Sandbox is what --sandbox asked for (docs/contract.md §11); under
	// inherit-codex the server asks Codex for its policy and reads it from each call.
	Sandbox sandbox.Settings
	// CodexTempDir is the directory Codex's "tmpdir" entry names: the server's
	// $TMPDIR, which it inherits from Codex.
	CodexTempDir string
	// TaskAfter is how long a cell whose call declared the tasks extension runs
	// before its call is answered with a task (docs/contract.md §2.8); nil is
	// DefaultTaskAfter, 0 never answers with a task.
	TaskAfter *time.Duration
	// TaskPoll is the poll interval tasks suggest; 0 is DefaultTaskPoll.
	TaskPoll time.Duration
	// LastClient is the private file in which each initialize and server/discover
	// records its client (lastclient.go); "" records nothing.
	LastClient string
	Logger     *slog.Logger
}

// Server is the MCP surface over one repl.Manager.
type Server struct {
	mcp       *mcp.Server
	repl      *repl.Manager
	brokers   *broker.Set
	artifacts *artifacts.Store
	notebooks *notebook.Keeper
	format    ResultFormat
	// yieldDefault is Config.YieldAfter.
	yieldDefault *time.Duration
	sandbox      sandbox.Settings
	codexTempDir string
	tasks        *taskTable
	lastClient   string
	logger       *slog.Logger
}

// instructions are what a client may show its model before any tool: Codex's code mode
// shows only their first line, cut at 250 characters, until the model searches its
// tools, and repeats the whole text in every tool's entry. So the first line says
// alone what the server is and which tool to call, and the whole stays short
// (TestInstructionsFitCodeMode).
const instructions = "repl-mcp is a persistent Python session on this machine (trusted, full host access, not a " +
	"sandbox): call execute_python to run code; variables and imports persist between calls.\n" +
	"For cells longer than a few minutes, python_start then python_run; python_cancel stops a run. " +
	"Results say whether variables survived and name the run and generation. Large outputs are artifacts " +
	"(artifact_read). Sub-agents share the default session: each opens its own with python_session_open. " +
	"Over HTTP under protocol 2026-07-28, pass python_health's session_id."

// New builds the server and registers its tools.
func New(cfg Config) *Server {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	format := cfg.ResultFormat
	if format == "" {
		format = FormatAuto
	}
	taskAfter, taskPoll := DefaultTaskAfter, cfg.TaskPoll
	if cfg.TaskAfter != nil {
		taskAfter = *cfg.TaskAfter
	}
	if taskPoll <= 0 {
		taskPoll = DefaultTaskPoll
	}
	s := &Server{repl: cfg.Repl, brokers: cfg.Brokers, artifacts: cfg.Artifacts, notebooks: cfg.Notebooks, format: format, yieldDefault: cfg.YieldAfter,
		sandbox: cfg.Sandbox, codexTempDir: cfg.CodexTempDir, tasks: newTaskTable(taskAfter, taskPoll), lastClient: cfg.LastClient, logger: logger}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "repl-mcp", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructionsFor(cfg.Sandbox.Mode),
		// go-sdk logs a normal shutdown (a cancelled Run) as an error; our own
		// logger reports what matters.
		Logger:       slog.New(slog.DiscardHandler),
		Capabilities: capabilities(cfg.Sandbox.Mode),
		// Clients must re-list tools every time (Claude Code mis-cached them otherwise).
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = 0
			c.CacheScope = "private"
		},
	})
	s.mcp.AddReceivingMiddleware(secondInitialize, undeclaredCapabilities, unknownToolMessage, s.recordLastClient, s.advertiseTasks, s.toolsForClient, s.toolOrder, s.taskAnswers, s.explicitIsError)
	for _, t := range s.tools() {
		s.register(t)
	}
	return s
}

// undeclaredMethods belong to capabilities repl-mcp does not declare (it declares
// only tools). go-sdk would answer them anyway (an empty prompts/list, say), which
// tells a client that a capability exists after initialize said it does not.
var undeclaredMethods = map[string]bool{
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
}

// undeclaredCapabilities answers the methods of undeclared capabilities with
// -32601 method not found, as the specification asks.
func undeclaredCapabilities(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if undeclaredMethods[method] {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: repl-mcp declares only the tools capability"}
		}
		return next(ctx, method, req)
	}
}

// secondInitialize answers an initialize on a session already initialized with
// -32600: go-sdk refuses it with a plain error, which goes out with code 0, not a
// JSON-RPC error code.
func secondInitialize(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		if method == "initialize" && err != nil && !errors.As(err, &rpcErr) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: this session is already " +
					"initialized; nothing changed. Send initialize once per session (over HTTP, without Mcp-Session-Id to open another)"}
			}
		}
		return res, err
	}
}

// unknownToolMessage words go-sdk's unknown-tool error as the contract does.
func unknownToolMessage(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		if method == "tools/call" && errors.As(err, &rpcErr) && strings.HasPrefix(rpcErr.Message, "unknown tool") {
			return nil, protocolError(fmt.Errorf("%w%s", errUnknownTool, strings.TrimPrefix(rpcErr.Message, "unknown tool")))
		}
		return res, err
	}
}

// toolOrder lists tools in the order of s.tools(): go-sdk sorts them by name, and
// the contract's order puts the everyday tools first.
func (s *Server) toolOrder(next mcp.MethodHandler) mcp.MethodHandler {
	rank := map[string]int{}
	for i, t := range s.tools() {
		rank[t.name] = i
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
			slices.SortStableFunc(list.Tools, func(a, b *mcp.Tool) int { return rank[a.Name] - rank[b.Name] })
		}
		return res, err
	}
}

// explicitIsError puts isError on every tools/call result, false on success:
// go-sdk's CallToolResult drops a false isError (omitempty), and clients that read
// the raw JSON index result.isError. It replaces the result by one that encodes it
// with the flag, whatever transport writes it (wireResult, result_wire.go). A client
// that reads failures better without the flag (unflagged) gets false.
func (s *Server) explicitIsError(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && method == "tools/call" {
			if r.IsError && s.unflagged(req) {
				r.IsError = false
			}
			return wireResult(r), nil
		}
		return res, err
	}
}

// flaggedResult is a CallToolResult that always encodes isError, for a result that
// a toolResult cannot write. Embedding the pointer keeps every method go-sdk calls
// on a result (its _meta, its result type).
type flaggedResult struct{ *mcp.CallToolResult }

func (r flaggedResult) MarshalJSON() ([]byte, error) {
	out, err := r.CallToolResult.MarshalJSON()
	if err != nil || r.IsError {
		return out, err
	}
	return withField(out, "isError", false), nil
}

// MCP exposes the underlying go-sdk server, for in-process connections (doctor).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// ServeStdio serves one client over newline-delimited JSON-RPC on in and out until
// the client closes in (every request already read is answered first) or ctx is
// cancelled (SIGTERM, SIGINT). Either way every session is closed before it returns.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return transport.ServeStdio(ctx, in, out, s.host())
}

// ServeStreamableHTTP serves MCP over streamable HTTP until ctx is cancelled
// (SIGTERM, SIGINT): any number of clients, every MCP session seeing the same REPL
// sessions (transport.ServeStreamableHTTP). It is meant to run once per Server.
func (s *Server) ServeStreamableHTTP(ctx context.Context, cfg transport.HTTPConfig) error {
	return transport.ServeStreamableHTTP(ctx, cfg, s.host())
}

// host is what the transports carry of s: go-sdk's server, the close of every REPL
// session, and the requests of the tasks extension.
func (s *Server) host() transport.Host {
	return transport.Host{MCP: s.mcp, CloseSessions: s.repl.Close, Tasks: taskRequests{s}, Logger: s.logger}
}
