package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The broker figure: a cell's mcp.call("fx", "echo", text="x") against the same call
// made by a direct go-sdk client, both to internal/mcpfixture served over stdio by
// the bench executable itself (fixtureEnv). The direct client times each CallTool in
// Go; the cell times each mcp.call with time.perf_counter_ns, so the figure leaves out
// the execute_python round trip and holds only the broker path: worker, server,
// broker, guardian-owned stdio peer and back.
const (
	fixtureEnv = "REPL_MCP_BENCH_FIXTURE"
	// fixtureServer is the fixture's name in the broker's registry.
	fixtureServer = "fx"

	brokerCalls        = 300
	brokerWarmup       = 30
	brokerCellTimeout  = 30 * time.Second // the one timing cell
	brokerDirectBudget = 30 * time.Second // the whole direct baseline
)

// brokerCell warms the broker's connection to the fixture up, then times each call.
// It prints the durations in nanoseconds as one JSON list (a trailing value of 300
// items would only be previewed) and its trailing value is their count.
var brokerCell = fmt.Sprintf(`import json as _json, time as _t
_pc = _t.perf_counter_ns
for _ in range(%[2]d):
    _r = mcp.call(%[1]q, "echo", text="x")
if mcp.text(_r) != "x" or _r.get("isError"):
    raise RuntimeError("echo answered %%r" %% (_r,))
_d = []
for _ in range(%[3]d):
    _s = _pc()
    mcp.call(%[1]q, "echo", text="x")
    _d.append(_pc() - _s)
print(_json.dumps(_d))
del _json, _t, _pc, _r, _s
len(_d)
`, fixtureServer, brokerWarmup, brokerCalls)

// brokerFigure is what the broker figure measured; each half has its own error.
type brokerFigure struct {
	direct    []time.Duration // per CallTool round trip of the direct go-sdk client
	directErr error

	cell       []time.Duration // per mcp.call inside the cell
	cellErr    error
	cellMs     float64 // the timing cell's elapsed_ms, as the server reported it
	cellRound  time.Duration
	configured string // what python_health said of the broker before the cell
	shutdown   string
}

// measureBroker measures the direct baseline, then the figure, side by side.
func (b *bench) measureBroker(ctx context.Context) brokerFigure {
	var f brokerFigure
	exe, err := fixtureExecutable()
	if err != nil {
		f.directErr, f.cellErr = err, err
		return f
	}
	f.direct, f.directErr = b.measureDirect(ctx, exe)
	f.cellErr = b.measureBrokerCell(ctx, exe, &f)
	return f
}

// fixtureExecutable is the bench executable, which serves the fixture when run with
// fixtureEnv=1.
func fixtureExecutable() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("find the bench executable to serve the fixture: %w", err)
	}
	return exe, nil
}

// measureDirect runs the fixture under a go-sdk client over mcp.CommandTransport and
// times brokerCalls echo calls after brokerWarmup.
func (b *bench) measureDirect(ctx context.Context, exe string) (samples []time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, brokerDirectBudget)
	defer cancel()
	cmd := exec.Command(exe)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), fixtureEnv+"=1")
	stderr := &tailBuffer{limit: 4 << 10}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-bench", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: eofGrace}, nil)
	defer func() {
		// Close ends the fixture (stdin EOF, then SIGTERM, then SIGKILL) and reaps it;
		// whatever is left in its group is the bench's to end.
		if session != nil {
			if cerr := session.Close(); cerr != nil && err == nil {
				b.notes.add("broker baseline: closing the go-sdk client: " + cerr.Error())
			}
		}
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			if cmd.ProcessState == nil && session == nil {
				cmd.Wait()
			}
		}
		if err != nil && stderr.Len() > 0 {
			err = fmt.Errorf("%w; the fixture's stderr ends: %s", err, lastLines(stderr.String(), 3))
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("go-sdk client: connect to the fixture: %w", err)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}
	samples = make([]time.Duration, 0, brokerCalls)
	for i := 0; i < brokerWarmup+brokerCalls; i++ {
		callCtx, cancelCall := context.WithTimeout(ctx, requestTimeout)
		start := time.Now()
		res, err := session.CallTool(callCtx, params)
		took := time.Since(start)
		cancelCall()
		if err != nil {
			return nil, fmt.Errorf("go-sdk client: echo call %d: %w", i+1, err)
		}
		if i == 0 || i == brokerWarmup+brokerCalls-1 {
			if err := checkEcho(res); err != nil {
				return nil, fmt.Errorf("go-sdk client: echo call %d: %w", i+1, err)
			}
		}
		if i >= brokerWarmup {
			samples = append(samples, took)
		}
	}
	return samples, nil
}

func checkEcho(res *mcp.CallToolResult) error {
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("unexpected result (isError %v, %d blocks)", res.IsError, len(res.Content))
	}
	if t, ok := res.Content[0].(*mcp.TextContent); !ok || t.Text != "x" {
		return fmt.Errorf("unexpected content %#v", res.Content[0])
	}
	return nil
}

// measureBrokerCell starts repl-mcp in a project whose .mcp.json registers the
// fixture, checks that the broker took the entry, and runs the timing cell.
func (b *bench) measureBrokerCell(ctx context.Context, exe string, f *brokerFigure) error {
	dir, err := os.MkdirTemp(b.dir, "broker-project-")
	if err != nil {
		return err
	}
	registry, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		fixtureServer: map[string]any{"command": exe, "env": map[string]string{fixtureEnv: "1"}},
	}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), registry, 0o644); err != nil {
		return err
	}
	s, err := startServer(ctx, dir, b.cfg.Binary, b.cfg.Python)
	if err != nil {
		return err
	}
	defer func() { f.shutdown = b.stopServer(s, "broker session") }()
	if _, err := s.initialize(ctx); err != nil {
		return err
	}
	h, err := s.brokerHealth(ctx)
	if err != nil {
		return err
	}
	f.configured = h.String()
	if h.ConfiguredServers != 1 || h.Disabled || h.ConfigurationError != nil {
		return fmt.Errorf("python_health reports the broker with %s, want exactly 1 configured server "+
			"(the fixture entry in %s was not accepted)", h, filepath.Join(dir, ".mcp.json"))
	}
	r, took, err := s.execute(ctx, brokerCell, brokerCellTimeout)
	if err != nil {
		return fmt.Errorf("timing cell: %w", err)
	}
	f.cellMs, f.cellRound = r.Structured.ElapsedMs, took
	f.cell, err = cellDurations(r)
	return err
}

// cellDurations reads the timing cell's printed list of nanoseconds.
func cellDurations(r cellResult) ([]time.Duration, error) {
	if r.Structured.Truncated.Stdout {
		return nil, errors.New("timing cell: its stdout was truncated")
	}
	var ns []int64
	if err := json.Unmarshal([]byte(r.Structured.Stdout), &ns); err != nil {
		return nil, fmt.Errorf("timing cell: its stdout is not a JSON list of nanoseconds: %.200q", r.Structured.Stdout)
	}
	if len(ns) != brokerCalls {
		return nil, fmt.Errorf("timing cell: %d durations, want %d", len(ns), brokerCalls)
	}
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		if n <= 0 {
			return nil, fmt.Errorf("timing cell: duration %d is %d ns", i, n)
		}
		out[i] = time.Duration(n)
	}
	return out, nil
}

// brokerHealth is the broker section of python_health.
type brokerHealth struct {
	ConfiguredServers   int     `json:"configured_servers"`
	ConnectedTransports int     `json:"connected_transports"`
	ConfigurationError  *string `json:"configuration_error"`
	Disabled            bool    `json:"disabled"`
}

func (h brokerHealth) String() string {
	parts := []string{
		"configured_servers " + strconv.Itoa(h.ConfiguredServers),
		"connected_transports " + strconv.Itoa(h.ConnectedTransports),
	}
	if h.Disabled {
		parts = append(parts, "disabled")
	}
	if h.ConfigurationError != nil {
		parts = append(parts, fmt.Sprintf("configuration_error %q", *h.ConfigurationError))
	}
	return strings.Join(parts, ", ")
}

func (s *mcpServer) brokerHealth(ctx context.Context) (brokerHealth, error) {
	res, _, err := s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_health", "arguments": map[string]any{}})
	if err != nil {
		return brokerHealth{}, err
	}
	var r struct {
		Structured struct {
			Broker *brokerHealth `json:"broker"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return brokerHealth{}, fmt.Errorf("python_health: %w", err)
	}
	if r.Structured.Broker == nil {
		return brokerHealth{}, errors.New("python_health: no broker section in structuredContent")
	}
	return *r.Structured.Broker, nil
}
