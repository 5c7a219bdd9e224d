package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// warmCells is how many trivial cells the doctor times after the first.
const warmCells = 20

// doctor runs the real server in-process over an in-memory MCP connection, executes
// real cells on the selected interpreter and reports what it found. It fails with
// the reason when Python cannot serve.
func doctor(ctx context.Context, cfg repl.Config, brokers *broker.Set, store *artifacts.Store, lastClient string, out io.Writer) error {
	start := time.Now()
	manager := repl.NewManager(ctx, cfg)
	defer manager.Close(time.Second)
	fmt.Fprintf(out, "repl-mcp %s (%s %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	// The default session's choice, as python_health reports it: the project's .venv
	// can override the server default.
	fmt.Fprintf(out, "python:   %s\n", manager.Default().Health().Environment.ChosenBy)
	fmt.Fprintf(out, "limits:   code %d KiB, timeout 0.01..%d s (default %d), output %d bytes per stream, history %d runs, worker RSS %s\n",
		repl.MaxCodeBytes/1024, int(repl.MaxTimeout.Seconds()), int(repl.DefaultTimeout.Seconds()), repl.StreamLimit, repl.HistoryRuns, rssText(cfg.MaxMemoryMiB))
	fmt.Fprintf(out, "broker:   %s\n", brokerText(brokers.Root().Health()))
	fmt.Fprintf(out, "client:   %s\n", lastClientText(lastClient))

	srv := server.New(server.Config{Version: version, Repl: manager, Brokers: brokers, Artifacts: store, Sandbox: cfg.Sandbox, CodexTempDir: os.TempDir(), Logger: cfg.Logger})
	// Under inherit-codex every cell needs Codex's policy: the doctor sends its
	// read-only one, as Codex would.
	var meta mcp.Meta
	if cfg.Sandbox.Mode == sandbox.InheritCodex {
		meta = mcp.Meta{sandbox.CodexMetaKey: map[string]any{"permissionProfile": map[string]any{"type": "managed", "network": "restricted",
			"file_system": map[string]any{"type": "restricted", "entries": []any{map[string]any{
				"path": map[string]any{"type": "special", "value": map[string]any{"kind": "root"}}, "access": "read"}}}}}}
	}
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, serverT, nil)
	if err != nil {
		return fmt.Errorf("doctor: connect to the in-process server: %w", err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-doctor", Version: version}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		return fmt.Errorf("doctor: MCP handshake with the in-process server: %w", err)
	}
	defer cs.Close()

	sessionID, err := doctorSession(ctx, cs)
	if err != nil {
		return err
	}
	first, err := doctorCell(ctx, cs, sessionID, meta, "import sys, platform; (platform.python_version(), sys.executable)")
	if err != nil {
		return err
	}
	cold := time.Since(start)
	var interp []string
	json.Unmarshal(first.Value, &interp)
	if len(interp) == 2 {
		fmt.Fprintf(out, "worker:   Python %s at %s\n", interp[0], interp[1])
	}
	fmt.Fprintf(out, "sandbox:  %s\n", sandboxLine(manager.Default().Health().Sandbox))
	warm := make([]time.Duration, 0, warmCells)
	for range warmCells {
		t := time.Now()
		if _, err := doctorCell(ctx, cs, sessionID, meta, "1 + 1"); err != nil {
			return err
		}
		warm = append(warm, time.Since(t))
	}
	slices.Sort(warm)
	fmt.Fprintf(out, "cold:     %.1f ms from server start to the first cell's result\n", ms(cold))
	fmt.Fprintf(out, "warm:     %.2f ms per trivial cell (median of %d)\n", ms(warm[len(warm)/2]), warmCells)
	fmt.Fprintln(out, "healthy")
	return nil
}

// doctorSession asks python_health for the default session's id, as a client on
// protocol 2026-07-28 must.
func doctorSession(ctx context.Context, cs *mcp.ClientSession) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "python_health"})
	if err != nil {
		return "", fmt.Errorf("doctor: python_health failed: %w", err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var health struct {
		Server repl.Health `json:"server"`
	}
	if err := json.Unmarshal(raw, &health); err != nil || health.Server.SessionID == "" {
		return "", fmt.Errorf("doctor: python_health gave no session id")
	}
	if health.Server.Python != nil {
		return "", errors.New("doctor: python_health started Python; it must not")
	}
	return health.Server.SessionID, nil
}

// doctorCell executes code and returns its result, or why Python could not run it.
func doctorCell(ctx context.Context, cs *mcp.ClientSession, sessionID string, meta mcp.Meta, code string) (*repl.Result, error) {
	args := map[string]any{"code": code, "timeout": 60, "session_id": sessionID}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "execute_python", Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("doctor: execute_python failed: %w", err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var r repl.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("doctor: unreadable execute_python result: %w", err)
	}
	if !r.Success {
		reason := "unknown failure"
		if r.Error != nil {
			reason = *r.Error
		}
		return nil, errors.New("doctor: Python is not healthy: " + reason)
	}
	return &r, nil
}

func rssText(mib int) string {
	if mib == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%d MiB", mib)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// brokerText summarizes the root broker's registry without connecting anything.
func brokerText(h broker.Health) string {
	switch {
	case h.Disabled:
		return "disabled (--mcp-scope none or REPL_MCP_NO_BRIDGE=1)"
	case h.ConfigurationError != nil:
		return "registry invalid: " + *h.ConfigurationError
	}
	text := fmt.Sprintf("%d server(s) configured, registry %s, scope %s", h.ConfiguredServers, h.Provenance.Registry, h.Provenance.Scope)
	for _, name := range h.ClientVisible {
		text += fmt.Sprintf("\nwarning:  %q: "+broker.MsgClientVisible, name,
			filepath.Join(h.Provenance.Project, ".mcp.json"), filepath.Join(h.Provenance.Project, registry.BrokerOnlyFile))
	}
	return text
}

// lastClientText names the client that connected last to a server of this user
// (its in-process client is the doctor's own and is not recorded).
func lastClientText(path string) string {
	if path == "" {
		return "not recorded (no user cache directory)"
	}
	c, err := server.ReadLastClient(path)
	switch {
	case errors.Is(err, server.ErrNoLastClient):
		return "no client has connected yet (recorded in " + path + ")"
	case err != nil:
		return "unknown: " + err.Error()
	}
	return fmt.Sprintf("last connected %s %s (protocol %s, %s form) at %s", c.Name, c.Version, c.Protocol, c.Form, c.At.Format(time.RFC3339))
}
