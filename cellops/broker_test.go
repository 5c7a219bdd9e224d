package cellops

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/broker/journal"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/mcpfixture"
	"github.com/iota-uz/repl-mcp/repl"
)

// TestMain lets the test binary serve as the guardian of the broker's stdio peers
// and as the fixture server they run.
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == guardian.Flag:
		os.Exit(guardian.Main())
	case os.Getenv("REPL_MCP_TEST_FIXTURE") == "1":
		os.Exit(mcpfixture.Main())
	}
	os.Exit(m.Run())
}

// testOps is one session's broker ops over a real Set whose project registry
// the test writes; its server "fx" is this test binary as the MCP fixture.
type testOps struct {
	t       *testing.T
	project string
	set     *broker.Set
	ops     *Ops
}

func newTestOps(t *testing.T) *testOps {
	t.Helper()
	project := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := &testOps{t: t, project: project}
	o.writeRegistry(map[string]any{"fx": map[string]any{"command": exe, "env": map[string]string{"REPL_MCP_TEST_FIXTURE": "1"}}})
	effects, err := journal.Open(journal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	o.set = broker.NewSet(broker.Options{
		Registry:   registry.Options{Project: project, Scope: registry.ScopeProject, LookupEnv: os.LookupEnv},
		Journal:    effects,
		Executable: exe,
		Version:    "test",
		Env:        os.Environ(),
	})
	t.Cleanup(o.set.Close)
	o.ops = New(Config{Brokers: o.set})
	o.ops.SessionOpened("s1", project)
	t.Cleanup(func() { o.ops.SessionClosed("s1", project) })
	return o
}

func (o *testOps) writeRegistry(servers any) {
	o.t.Helper()
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		o.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.project, ".mcp.json"), data, 0o600); err != nil {
		o.t.Fatal(err)
	}
}

// serve runs op with params given as JSON text, as the worker sends them.
func (o *testOps) serve(op, params string) (map[string]any, error) {
	o.t.Helper()
	out, err := o.ops.Serve(o.t.Context(), repl.RPC{SessionID: "s1", Project: o.project, RunID: "r1", Op: op, Params: json.RawMessage(params)})
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		o.t.Fatalf("%s result %s is not a JSON object: %v", op, out, err)
	}
	return v, nil
}

func (o *testOps) mustServe(op, params string) map[string]any {
	o.t.Helper()
	v, err := o.serve(op, params)
	if err != nil {
		o.t.Fatalf("%s %s: %v", op, params, err)
	}
	return v
}

// TestBrokerOpsResults pins each op's result as the worker reads it (docs/contract.md §8.10).
func TestBrokerOpsResults(t *testing.T) {
	o := newTestOps(t)
	if got := o.mustServe("servers", `{}`); !jsonEqual(t, got, `{"servers": ["fx"]}`) {
		t.Errorf("servers = %v", got)
	}
	listing := o.mustServe("tools", `{"server": "fx", "timeout": 30}`)
	if ttl, ok := listing["ttlMs"].(float64); !ok || ttl <= 0 || ttl > 15000 {
		t.Errorf("tools ttlMs = %v, want the catalogue's freshness in (0, 15000] ms", listing["ttlMs"])
	}
	tools := listing["tools"].([]any)
	var names []string
	for _, tool := range tools {
		def := tool.(map[string]any)
		if def["inputSchema"] == nil {
			t.Errorf("tool %v lacks its schema", def["name"])
		}
		names = append(names, def["name"].(string))
	}
	if !strings.Contains(strings.Join(names, ","), "echo") {
		t.Errorf("tools = %v", names)
	}
	env := o.mustServe("call", `{"server": "fx", "tool": "echo", "arguments": {"text": "hi"}, "timeout": 60}`)
	if !jsonEqual(t, env["structuredContent"], `{"text": "hi"}`) || env["isError"] != false {
		t.Errorf("call envelope = %v", env)
	}
	recs := o.mustServe("journal", `{}`)["records"].([]any)
	if len(recs) != 1 {
		t.Fatalf("journal = %v", recs)
	}
	rec := recs[0].(map[string]any)
	if rec["session_id"] != "s1" || rec["run_id"] != "r1" || rec["project"] != o.project || rec["tool"] != "echo" || rec["status"] != "completed" {
		t.Errorf("journal record = %v", rec)
	}
	x := o.mustServe("explain", `{"server": "fx", "tool": "echo"}`)
	if x["server"] != "fx" || x["tool"] != "echo" || x["status"] != "ready" || x["network_probe_performed"] != false {
		t.Errorf("explain = %v", x)
	}
	if x := o.mustServe("explain", `{"server": "fx", "tool": null}`); x["tool"] != nil || x["status"] != "ready" {
		t.Errorf("explain without a tool = %v", x)
	}
	h := o.mustServe("refresh", `{}`)
	if h["configured_servers"] != float64(1) || h["configuration_error"] != nil || h["max_concurrent_requests"] != float64(broker.MaxConcurrentRequests) {
		t.Errorf("refresh = %v", h)
	}
}

// TestBrokerOpsRefuseMalformedParams pins the decoding errors, and that a field
// of the wrong type is refused in the broker's order: server, tool, arguments,
// timeout.
func TestBrokerOpsRefuseMalformedParams(t *testing.T) {
	const (
		badServer  = "MCP server name must be a string of 1..200 bytes without control characters"
		badTool    = "MCP tool name must be a string of 1..400 bytes without control characters"
		badTimeout = "MCP timeout must be between 0.01 and 3600 seconds"
	)
	o := newTestOps(t)
	for _, c := range []struct{ op, params, want string }{
		{"nosuch", `{}`, "Unknown MCP bridge operation"},
		{"call", `[]`, "MCP call params must be an object"},
		{"tools", `"fx"`, "MCP tools params must be an object"},
		{"explain", `7`, "MCP explain params must be an object"},
		{"call", `{}`, badServer},
		{"call", `{"server": 5, "tool": 7}`, badServer},
		{"call", `{"server": "fx", "tool": ["echo"]}`, badTool},
		{"call", `{"server": "fx", "tool": "echo", "arguments": [1], "timeout": "soon"}`, "arguments must be a JSON object"},
		{"call", `{"server": "fx", "tool": "echo", "timeout": "soon"}`, badTimeout},
		{"call", `{"server": "fx", "tool": "echo", "timeout": 0}`, badTimeout},
		{"call", `{"server": "fx", "tool": "echo", "timeout": 3601}`, badTimeout},
		{"tools", `{"server": null}`, badServer},
		{"tools", `{"server": "fx", "timeout": -1}`, badTimeout},
		{"explain", `{"server": "fx", "tool": 1}`, "tool must be a string or omitted"},
		{"explain", `{"server": "fx", "tool": {}}`, "tool must be a string or omitted"},
		{"explain", `{"server": 1, "tool": 1}`, badServer},
		{"explain", `{"server": "fx", "tool": ""}`, badTool},
		// An absent or null timeout is the default, which gets as far as the registry.
		{"tools", `{"server": "nosuch", "timeout": null}`, "Unknown or unauthorized MCP server"},
		{"call", `{"server": "nosuch", "tool": "echo"}`, "Unknown or unauthorized MCP server"},
	} {
		_, err := o.serve(c.op, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want %q", c.op, c.params, err, c.want)
		}
	}
	if recs := o.mustServe("journal", `{}`)["records"].([]any); len(recs) != 0 {
		t.Fatalf("a refused op reached the journal: %v", recs)
	}
}

// TestBrokerOpsAfterTheSetCloses: a session opened after shutdown holds no
// broker, and one opened before meets a closed one; both say so.
func TestBrokerOpsAfterTheSetCloses(t *testing.T) {
	o := newTestOps(t)
	o.set.Close()
	if _, err := o.serve("servers", `{}`); err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Fatalf("servers on a closed broker: %v", err)
	}
	o.ops.SessionOpened("s2", o.project)
	_, err := o.ops.Serve(t.Context(), repl.RPC{SessionID: "s2", Project: o.project, Op: "servers", Params: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "No MCP broker serves this session") {
		t.Fatalf("servers of a session without a broker: %v", err)
	}
}

func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(w)
	return string(a) == string(b)
}

// TestRefreshFailsWhenTheReloadFails: mcp.refresh() raises ToolError (the worker
// raises on an error reply) with the configuration error when the registry does
// not load, and returns the health again once it does.
func TestRefreshFailsWhenTheReloadFails(t *testing.T) {
	o := newTestOps(t)
	registryFile := filepath.Join(o.project, ".mcp.json")
	if err := os.WriteFile(registryFile, []byte(`{"mcpServers": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := o.serve("refresh", `{}`)
	if err == nil || !strings.HasPrefix(err.Error(), "MCP configuration error: MCP registry is invalid JSON; values are omitted from diagnostics") ||
		!strings.HasSuffix(err.Error(), "; repair registry then mcp.refresh()") {
		t.Fatalf("refresh of invalid JSON: %v", err)
	}
	if err := os.Remove(registryFile); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(registryFile, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = o.serve("refresh", `{}`)
	if err == nil || !strings.Contains(err.Error(), "MCP configuration error: MCP registry must be a regular file; FIFOs and devices are unsupported") {
		t.Fatalf("refresh of a FIFO: %v", err)
	}
	if err := os.Remove(registryFile); err != nil {
		t.Fatal(err)
	}
	o.writeRegistry(map[string]any{})
	h := o.mustServe("refresh", `{}`)
	if h["configuration_error"] != nil || h["configured_servers"] != float64(0) {
		t.Fatalf("refresh after the repair = %v", h)
	}
}

// TestNamesAndTimeoutsDecodeAsEncodingJSON holds the short ways of name and
// seconds to what encoding/json makes of the same values.
func TestNamesAndTimeoutsDecodeAsEncodingJSON(t *testing.T) {
	for _, raw := range []string{`"fx"`, `"echo"`, `""`, `"é/ü"`, `"a\"b"`, `"\u0066x"`, "\"\xff\"", `"tab\t"`, `5`, `null`, `["fx"]`, `{}`, `true`} {
		var want string
		json.Unmarshal([]byte(raw), &want)
		if got := name(json.RawMessage(raw)); got != want {
			t.Errorf("name(%s) = %q, encoding/json decodes %q", raw, got, want)
		}
	}
	for _, raw := range []string{`120`, `120.0`, `0.01`, `-1`, `-0`, `1e3`, `1E-2`, `3600.5`, `1e400`, `-1e400`, `"soon"`, `true`, `[1]`, `{}`} {
		want := time.Duration(0)
		var secs float64
		if json.Unmarshal([]byte(raw), &secs) == nil {
			want = time.Duration(secs * float64(time.Second))
		}
		if got := seconds(json.RawMessage(raw), time.Minute); got != want {
			t.Errorf("seconds(%s) = %v, encoding/json decodes %v", raw, got, want)
		}
	}
	if got := seconds(nil, time.Minute); got != time.Minute {
		t.Errorf("seconds of an absent timeout = %v, want the default", got)
	}
}
