package server

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/broker/journal"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/internal/mcpfixture"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/notebook"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/server/transport"
	"github.com/iota-uz/repl-mcp/statedir"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireServer is a real Server (real Python, a real artifact store, and a broker
// whose registry names fx, the MCP fixture served over loopback HTTP) on real stdio
// pipes. The test writes and reads raw JSON-RPC lines, so it sees exactly what goes
// on the wire, and every tool result it reads is checked against the tool's
// published outputSchema.
type wireServer struct {
	t       *testing.T
	project string
	srv     *Server
	stdin   io.WriteCloser
	lines   chan []byte
	nextID  int
	schemas map[string]*jsonschema.Resolved
	// seen records, per tool, the isError values of the results checked.
	seen map[string]map[bool]bool
	// meta is the _meta of every request under 2026-07-28, nil before.
	meta map[string]any
	// list is the reply to the tools/list made at the start.
	list wireReply
}

// wireReply is one reply as it arrived.
type wireReply struct {
	raw []byte
	msg map[string]any
}

func (r wireReply) result() map[string]any {
	res, _ := r.msg["result"].(map[string]any)
	return res
}

// newServerParts builds the real components of a test server on project.
func newServerParts(t *testing.T, ctx context.Context, project string) *Server {
	t.Helper()
	return newServerPartsFormat(t, ctx, project, FormatAuto)
}

// newServerPartsFormat is newServerParts with a --result-format.
func newServerPartsFormat(t *testing.T, ctx context.Context, project string, format ResultFormat) *Server {
	t.Helper()
	fixture := httptest.NewServer(mcpfixture.Handler())
	t.Cleanup(fixture.Close)
	reg := fmt.Sprintf(`{"mcpServers": {"fx": {"type": "http", "url": %q}}}`, fixture.URL+"/mcp")
	if err := os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	effects, err := journal.Open(journal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	brokers := broker.NewSet(broker.Options{
		Registry:   registry.Options{Project: project, Scope: registry.ScopeProject, LookupEnv: os.LookupEnv},
		Journal:    effects,
		Executable: exe,
		Version:    "test",
		Env:        os.Environ(),
	})
	t.Cleanup(func() { brokers.Close(); effects.Close() })
	store := artifacts.New(artifacts.Config{})
	t.Cleanup(store.Close)
	notebooks, err := notebook.New(notebook.Config{Root: filepath.Join(t.TempDir(), "records")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { notebooks.Close() })
	state, err := statedir.Open(filepath.Join(t.TempDir(), "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	manager := repl.NewManager(ctx, repl.Config{OpLimits: cellops.Limits(),
		Python: pythons.ForTest(t)[0].Path, PythonSource: "test", Project: project, Env: os.Environ(), Version: "test",
		Services: cellops.New(cellops.Config{Brokers: brokers, Store: store, Notebooks: notebooks}), Recorder: notebooks,
		State: state, Snapshots: repl.SnapshotConfig{Delay: 100 * time.Millisecond},
	})
	return New(Config{Version: "test", Repl: manager, Brokers: brokers, Artifacts: store, Notebooks: notebooks, ResultFormat: format})
}

// startWire serves a real Server over stdio pipes and initializes it; the server
// is stopped, and must stop, when the test ends.
func startWire(t *testing.T) *wireServer {
	t.Helper()
	return startWireAs(t, wireClient{name: "wire-test"})
}

// wireClient is who a wire test's client says it is, and how it speaks.
type wireClient struct {
	name string
	// protocol is the version it asks for; under 2026-07-28 it sends no
	// initialize and puts _meta on every request. "" is 2025-11-25.
	protocol string
	format   ResultFormat // the server's --result-format; "" is auto
	// discover: under 2026-07-28, say who it is only in a first server/discover,
	// and leave clientInfo out of every later request's _meta.
	discover bool
	// register adds tools of the test's own to the server before it serves.
	register func(*Server)
}

// startWireAs is startWire for the client c. Tools are checked against their
// outputSchema when the server publishes one to this client.
func startWireAs(t *testing.T, c wireClient) *wireServer {
	t.Helper()
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	srv := newServerPartsFormat(t, ctx, project, c.format)
	if c.register != nil {
		c.register(srv)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := srv.ServeStdio(ctx, inR, outW)
		outW.Close()
		served <- err
	}()
	w := &wireServer{t: t, project: project, srv: srv, stdin: inW, lines: make(chan []byte, 64), seen: map[string]map[bool]bool{}}
	if c.protocol >= transport.StatelessProtocol {
		w.meta = map[string]any{
			mcp.MetaKeyProtocolVersion:    c.protocol,
			mcp.MetaKeyClientInfo:         map[string]any{"name": c.name, "version": "1"},
			mcp.MetaKeyClientCapabilities: map[string]any{},
		}
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(w.lines)
		br := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				w.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		defer cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("ServeStdio did not return within 10 s of stdin's end")
			cancel()
			<-served
		}
		for range w.lines {
		}
		<-readDone
	})

	if c.discover && w.meta != nil {
		if reply := w.request("server/discover", map[string]any{}); reply.result() == nil {
			t.Fatalf("server/discover: %s", reply.raw)
		}
		delete(w.meta, mcp.MetaKeyClientInfo)
	}
	if w.meta == nil {
		protocol := cmp.Or(c.protocol, "2025-11-25")
		init := w.request("initialize", map[string]any{
			"protocolVersion": protocol, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": c.name, "version": "1"},
		})
		if init.result() == nil {
			t.Fatalf("initialize: %s", init.raw)
		}
		w.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	}
	list := w.request("tools/list", map[string]any{})
	tools, _ := list.result()["tools"].([]any)
	if len(tools) == 0 {
		t.Fatalf("tools/list: %s", list.raw)
	}
	w.list = list
	w.schemas = map[string]*jsonschema.Resolved{}
	for _, raw := range tools {
		tl := raw.(map[string]any)
		name := tl["name"].(string)
		if tl["outputSchema"] == nil {
			continue
		}
		encoded, _ := json.Marshal(tl["outputSchema"])
		var schema jsonschema.Schema
		if err := json.Unmarshal(encoded, &schema); err != nil {
			t.Fatalf("%s: outputSchema %s: %v", name, encoded, err)
		}
		resolved, err := schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: outputSchema %s: %v", name, encoded, err)
		}
		// Every output schema refuses an empty object: a validator that passes
		// anything would make the checks below worthless.
		if resolved.Validate(map[string]any{}) == nil {
			t.Fatalf("%s: outputSchema accepts {}: %s", name, encoded)
		}
		w.schemas[name] = resolved
	}
	return w
}

func (w *wireServer) send(msg map[string]any) {
	w.t.Helper()
	line, err := json.Marshal(msg)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		w.t.Fatalf("write to the server: %v", err)
	}
}

// wait bounds a wait by the test's deadline, less a margin to report in.
func wait(t *testing.T, limit time.Duration) time.Duration {
	if d, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(d)-5*time.Second)
	}
	return max(limit, 0)
}

// request sends a request and returns its reply.
func (w *wireServer) request(method string, params any) wireReply {
	w.t.Helper()
	w.nextID++
	id := w.nextID
	if w.meta != nil {
		if p, ok := params.(map[string]any); ok {
			p["_meta"] = w.meta
		}
	}
	w.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timer := time.NewTimer(wait(w.t, 60*time.Second))
	defer timer.Stop()
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("%s: the server closed its stdout before replying", method)
			}
			var msg map[string]any
			if err := json.Unmarshal(line, &msg); err != nil {
				w.t.Fatalf("the server wrote a line that is not JSON: %q", line)
			}
			if got, _ := msg["id"].(float64); got == float64(id) {
				return wireReply{raw: bytes.TrimSuffix(line, []byte("\n")), msg: msg}
			}
		case <-timer.C:
			w.t.Fatalf("%s: no reply", method)
		}
	}
}

// call makes a tools/call that must be answered with a tool result, checks that
// result on the wire (an explicit boolean isError, structuredContent valid against
// the tool's outputSchema) and returns its structuredContent and isError.
func (w *wireServer) call(t *testing.T, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	reply := w.request("tools/call", map[string]any{"name": tool, "arguments": args})
	res := reply.result()
	if res == nil {
		t.Fatalf("%s %v: not a tool result: %s", tool, args, abbreviate(reply.raw))
	}
	isError, ok := res["isError"].(bool)
	if !ok {
		t.Fatalf("%s %v: the result has no boolean isError: %s", tool, args, abbreviate(reply.raw))
	}
	sc, _ := res["structuredContent"].(map[string]any)
	if err := w.schemas[tool].Validate(res["structuredContent"]); err != nil {
		t.Fatalf("%s %v: structuredContent does not match the outputSchema: %v\n%s", tool, args, err, abbreviate(reply.raw))
	}
	if w.seen[tool] == nil {
		w.seen[tool] = map[bool]bool{}
	}
	w.seen[tool][isError] = true
	return sc, isError
}

// succeed is call for a result that must not be an error.
func (w *wireServer) succeed(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	sc, isError := w.call(t, tool, args)
	if isError {
		t.Fatalf("%s %v: isError: %v", tool, args, sc)
	}
	return sc
}

// fail is call for a result that must be an error.
func (w *wireServer) fail(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	sc, isError := w.call(t, tool, args)
	if !isError {
		t.Fatalf("%s %v: no isError: %v", tool, args, sc)
	}
	return sc
}

// protocolError makes a tools/call that must be answered with a JSON-RPC error.
func (w *wireServer) protocolError(t *testing.T, tool string, args any) map[string]any {
	t.Helper()
	reply := w.request("tools/call", map[string]any{"name": tool, "arguments": args})
	e, _ := reply.msg["error"].(map[string]any)
	if e == nil {
		t.Fatalf("%s %v: no protocol error: %s", tool, args, abbreviate(reply.raw))
	}
	return e
}

func abbreviate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// poll calls tool until cond holds on its structuredContent, within limit.
func (w *wireServer) poll(t *testing.T, tool string, args map[string]any, limit time.Duration, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	end := time.Now().Add(wait(t, limit))
	for {
		sc, _ := w.call(t, tool, args)
		if cond(sc) {
			return sc
		}
		if time.Now().After(end) {
			t.Fatalf("%s %v: condition not met within %v; last %v", tool, args, limit, sc)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *wireServer) write(name, content string) string {
	w.t.Helper()
	path := filepath.Join(w.project, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// TestToolResultsOnTheWire calls every tool for real, over raw stdio, with
// arguments that succeed and arguments that fail, and checks every result: isError
// is on the wire as a boolean, false on success, and structuredContent matches the
// tool's declared outputSchema in both shapes.
func TestToolResultsOnTheWire(t *testing.T) {
	w := startWire(t)
	var sid, run, aid string

	t.Run("python_health", func(t *testing.T) {
		sc := w.succeed(t, "python_health", map[string]any{})
		sid, _ = sc["server"].(map[string]any)["session_id"].(string)
		if sid == "" || sc["server"].(map[string]any)["python"] != nil {
			t.Fatalf("health of an idle server: %v", sc["server"])
		}
	})
	t.Run("execute_python", func(t *testing.T) {
		if sc := w.succeed(t, "execute_python", map[string]any{"code": "x = 1\nx + 1"}); sc["return_value"] != "2" {
			t.Fatalf("x + 1: %v", sc)
		}
		if sc := w.fail(t, "execute_python", map[string]any{"code": "1/0"}); sc["success"] != false {
			t.Fatalf("1/0: %v", sc)
		}
		// A large trailing value becomes an artifact, declared in the schema too.
		if sc := w.succeed(t, "execute_python", map[string]any{"code": "'Ж' * 100000"}); sc["artifact"] == nil {
			t.Fatalf("a large value: %v", sc["artifact_error"])
		}
	})
	t.Run("python_session_restore", func(t *testing.T) {
		// Its own worker's snapshot is no restore's source; the one a reset left is.
		w.fail(t, "python_session_restore", map[string]any{})
		w.poll(t, "python_health", map[string]any{}, 20*time.Second, func(sc map[string]any) bool {
			return sc["server"].(map[string]any)["snapshot"].(map[string]any)["status"] == "saved"
		})
		w.succeed(t, "execute_python", map[string]any{"code": "y = 2", "reset": true})
		if sc := w.succeed(t, "python_session_restore", map[string]any{}); sc["restored_count"] != 1.0 {
			t.Fatalf("restore after a reset: %v", sc)
		}
	})
	t.Run("python_execute_file", func(t *testing.T) {
		w.write("script.py", "import sys\nprint(sys.argv[1:])\n")
		sc := w.succeed(t, "python_execute_file", map[string]any{"session_id": sid, "path": "script.py", "argv": []string{"a"}})
		if sc["stdout"] != "['a']\n" {
			t.Fatalf("script.py a: %v", sc)
		}
		w.succeed(t, "python_execute_file", map[string]any{"session_id": sid, "path": "script.py", "mode": "fresh"})
		w.fail(t, "python_execute_file", map[string]any{"session_id": sid, "path": "missing.py"})
		w.write("exit.py", "raise SystemExit(3)\n")
		if sc := w.fail(t, "python_execute_file", map[string]any{"session_id": sid, "path": "exit.py"}); sc["exit_code"] != 3.0 {
			t.Fatalf("SystemExit(3): %v", sc)
		}
	})
	t.Run("python_start", func(t *testing.T) {
		sc := w.succeed(t, "python_start", map[string]any{"code": "import time\ntime.sleep(60)"})
		run, _ = sc["run_id"].(string)
		if sc := w.fail(t, "python_start", map[string]any{"code": "1"}); sc["run_id"] != nil {
			t.Fatalf("a refused start has a run_id: %v", sc)
		}
	})
	t.Run("python_session_inspect", func(t *testing.T) {
		// The namespace needs an idle session; the run above is still going.
		w.fail(t, "python_session_inspect", map[string]any{"include_namespace": true})
		w.succeed(t, "python_session_inspect", map[string]any{})
	})
	t.Run("python_run", func(t *testing.T) {
		if sc := w.succeed(t, "python_run", map[string]any{"run_id": run}); sc["status"] == nil {
			t.Fatalf("the active run: %v", sc)
		}
		w.fail(t, "python_run", map[string]any{"run_id": "no-such-run"})
	})
	t.Run("python_cancel", func(t *testing.T) {
		if sc := w.succeed(t, "python_cancel", map[string]any{}); sc["run_id"] != run {
			t.Fatalf("cancel: %v", sc)
		}
		w.poll(t, "python_run", map[string]any{"run_id": run}, 20*time.Second, func(sc map[string]any) bool { return sc["success"] == false })
		if sc := w.fail(t, "python_cancel", map[string]any{}); sc["cancel_requested"] != false || sc["session_id"] != sid {
			t.Fatalf("cancel without a run: %v", sc)
		}
		if sc := w.succeed(t, "python_session_inspect", map[string]any{"include_namespace": true}); sc["namespace"] == nil {
			t.Fatalf("inspect with the namespace: %v", sc)
		}
	})
	var other string
	t.Run("python_session_open", func(t *testing.T) {
		sc := w.succeed(t, "python_session_open", map[string]any{"name": "other", "project": w.project})
		other, _ = sc["session_id"].(string)
		w.fail(t, "python_session_open", map[string]any{"name": "nowhere", "project": filepath.Join(w.project, "missing")})
	})
	t.Run("python_session_list", func(t *testing.T) {
		if sc := w.succeed(t, "python_session_list", map[string]any{}); len(sc["sessions"].([]any)) != 2 {
			t.Fatalf("list: %v", sc)
		}
	})
	t.Run("python_session_close", func(t *testing.T) {
		w.succeed(t, "python_session_close", map[string]any{"session_id": other})
		w.fail(t, "python_session_close", map[string]any{"session_id": sid})
	})
	t.Run("python_session_export", func(t *testing.T) {
		sc := w.succeed(t, "python_session_export", map[string]any{"session_id": sid, "path": "session.ipynb"})
		if sc["exported"] != true || sc["path"] != filepath.Join(w.project, "session.ipynb") || sc["cells"].(float64) < 5 {
			t.Fatalf("export: %v", sc)
		}
		if sc := w.fail(t, "python_session_export", map[string]any{"session_id": sid, "path": "session.ipynb"}); !strings.Contains(sc["error"].(string), "overwrite=true") {
			t.Fatalf("export over an existing file: %v", sc)
		}
	})
	t.Run("artifact_create", func(t *testing.T) {
		w.write("data.json", `{"rows": [1, 2, 3]}`)
		sc := w.succeed(t, "artifact_create", map[string]any{"session_id": sid, "path": "data.json", "format": "json"})
		aid, _ = sc["id"].(string)
		if sc["session_id"] != sid {
			t.Fatalf("create: %v", sc)
		}
		w.fail(t, "artifact_create", map[string]any{"session_id": sid, "path": "missing.json", "format": "json"})
	})
	t.Run("artifact_read", func(t *testing.T) {
		if sc := w.succeed(t, "artifact_read", map[string]any{"session_id": sid, "id": aid, "length": 7}); sc["content"] != `{"rows"` {
			t.Fatalf("read: %v", sc)
		}
		w.fail(t, "artifact_read", map[string]any{"session_id": sid, "id": "no-such-artifact"})
	})
	t.Run("artifact_save", func(t *testing.T) {
		w.succeed(t, "artifact_save", map[string]any{"session_id": sid, "id": aid, "path": "saved.json"})
		w.fail(t, "artifact_save", map[string]any{"session_id": sid, "id": aid, "path": "saved.json"})
	})
	t.Run("artifact_forward", func(t *testing.T) {
		sc := w.succeed(t, "artifact_forward", map[string]any{"session_id": sid, "id": aid, "server": "fx", "tool": "echo", "argument": "text", "format": "text"})
		if sc["structuredContent"].(map[string]any)["text"] != `{"rows": [1, 2, 3]}` || sc["session_id"] != sid {
			t.Fatalf("forward to echo: %v", sc)
		}
		// A downstream tool error is the forward's isError, in the envelope's shape.
		w.write("nowhere.txt", filepath.Join(w.project, "no-such-dir", "marker"))
		nowhere := w.succeed(t, "artifact_create", map[string]any{"session_id": sid, "path": "nowhere.txt", "format": "text"})["id"]
		if sc := w.fail(t, "artifact_forward", map[string]any{"session_id": sid, "id": nowhere, "server": "fx", "tool": "slow_write", "argument": "marker", "format": "text", "arguments": map[string]any{"timeout": 0}}); sc["isError"] != true {
			t.Fatalf("forward to a failing tool: %v", sc)
		}
		w.fail(t, "artifact_forward", map[string]any{"session_id": sid, "id": aid, "server": "no-such-server", "tool": "echo", "argument": "text"})
	})
	t.Run("artifact_delete", func(t *testing.T) {
		w.succeed(t, "artifact_delete", map[string]any{"session_id": sid, "id": aid})
		w.fail(t, "artifact_delete", map[string]any{"session_id": sid, "id": aid})
	})

	// Every tool was checked in both shapes, except those that have no failure.
	noFailure := []string{"python_health", "python_session_list"}
	for name := range w.schemas {
		if !w.seen[name][false] {
			t.Errorf("%s: no successful result was checked", name)
		}
		if !w.seen[name][true] && !slices.Contains(noFailure, name) {
			t.Errorf("%s: no failed result was checked", name)
		}
	}
}

// TestRefusalBeforeARunMatchesTheSchema: under --sandbox inherit-codex a call without
// Codex's policy runs nothing, and its failure is one of the shapes the execution
// tools publish (a client that checks structuredContent would refuse it otherwise).
func TestRefusalBeforeARunMatchesTheSchema(t *testing.T) {
	w := startWireAs(t, wireClient{name: "wire-test", register: func(s *Server) { s.sandbox.Mode = sandbox.InheritCodex }})
	sid := w.succeed(t, "python_health", map[string]any{})["server"].(map[string]any)["session_id"]
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"execute_python", map[string]any{"code": "1"}},
		{"python_execute_file", map[string]any{"path": "script.py", "session_id": sid}},
		{"python_start", map[string]any{"code": "1"}},
	} {
		sc := w.fail(t, call.tool, call.args)
		if sc["run_id"] != nil || sc["success"] != nil || !strings.Contains(sc["error"].(string), "Codex") {
			t.Errorf("%s without Codex's policy: %v", call.tool, sc)
		}
	}
}

// TestArgumentsMeanWhatTheSchemaSays: over the real server, expected_generation 1.0
// guards with generation 1, artifact_read reads from offset 5.0, and code null is
// refused before anything runs.
func TestArgumentsMeanWhatTheSchemaSays(t *testing.T) {
	w := startWire(t)
	sc := w.succeed(t, "execute_python", map[string]any{"code": "x = 1"})
	sid := sc["session_id"].(string)
	if sc["generation"] != 1.0 {
		t.Fatalf("generation %v, want 1", sc["generation"])
	}
	for _, gen := range []json.RawMessage{json.RawMessage(`1.0`), json.RawMessage(`1e0`)} {
		if sc := w.succeed(t, "execute_python", map[string]any{"code": "x += 1", "expected_generation": gen}); sc["success"] != true {
			t.Fatalf("expected_generation %s: %v", gen, sc)
		}
	}
	if sc := w.fail(t, "execute_python", map[string]any{"code": "x += 100", "expected_generation": json.RawMessage(`0.0`)}); !strings.Contains(sc["error"].(string), "STATE_CHANGED") {
		t.Fatalf("a stale expected_generation 0.0: %v", sc)
	}
	if sc := w.succeed(t, "execute_python", map[string]any{"code": "x"}); sc["value"] != 3.0 {
		t.Fatalf("x = %v, want 3: a guarded cell ran or a good one did not", sc["value"])
	}

	w.write("digits.txt", "0123456789")
	aid := w.succeed(t, "artifact_create", map[string]any{"session_id": sid, "path": "digits.txt", "format": "text"})["id"]
	if sc := w.succeed(t, "artifact_read", map[string]any{"session_id": sid, "id": aid, "offset": json.RawMessage(`5.0`), "length": json.RawMessage(`2e0`)}); sc["content"] != "56" {
		t.Fatalf("offset 5.0, length 2e0: %v", sc)
	}

	e := w.protocolError(t, "execute_python", map[string]any{"code": nil})
	if e["code"] != -32602.0 || e["message"] != "Invalid arguments at /code: got null, which is not allowed: pass a string" {
		t.Fatalf("code null: %v", e)
	}
	if sc := w.succeed(t, "python_run", map[string]any{}); sc["value"] != 3.0 {
		t.Fatalf("the latest run is not the last good cell: %v", sc)
	}
}

// wireToken is the bearer token of TestIsErrorOverHTTP's server.
const wireToken = "wire-test-token-0123"

// TestIsErrorOverHTTP: Streamable HTTP carries the explicit isError too, and
// go-sdk's own client (the in-process connection doctor uses) reads it as before.
func TestIsErrorOverHTTP(t *testing.T) {
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	srv := newServerParts(t, ctx, project)
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStreamableHTTP(ctx, transport.HTTPConfig{Addr: "127.0.0.1:0", Token: wireToken, Listening: func(u, _ string) { urls <- u }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the HTTP server did not stop within 10 s")
		}
	})
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("ServeStreamableHTTP: %v", err)
	case <-time.After(wait(t, 10*time.Second)):
		t.Fatal("the HTTP server did not start listening")
	}
	post := func(body string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+wireToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s %v", body, resp.StatusCode, data, err)
		}
		return string(data)
	}
	for code, want := range map[string]string{"1 + 1": `"isError":false`, "1/0": `"isError":true`} {
		body := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"` + code + `"}}}`)
		if !strings.Contains(body, want) {
			t.Errorf("%s over HTTP: no %s in %s", code, want, body)
		}
	}
	if body := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"python_health","arguments":{}}}`); !strings.Contains(body, `"isError":false`) {
		t.Errorf("python_health over HTTP: no isError false in %.300s", body)
	}

	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "in-process", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	health, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "python_health", Arguments: map[string]any{}})
	if err != nil || health.IsError {
		t.Fatalf("python_health in process: %v, %v", health, err)
	}
	sid := health.StructuredContent.(map[string]any)["server"].(map[string]any)["session_id"]
	for code, want := range map[string]bool{"2 + 2": false, "1/0": true} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{"code": code, "session_id": sid}})
		if err != nil || res.IsError != want {
			t.Fatalf("%s in process: %v, %v; want isError %v", code, res, err, want)
		}
	}
}

// TestSecondInitializeIsInvalidRequest: an initialize on a session already
// initialized is answered with -32600 and a message that says so, not go-sdk's
// error with code 0; the session goes on serving.
func TestSecondInitializeIsInvalidRequest(t *testing.T) {
	w := startWire(t)
	reply := w.request("initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "again", "version": "1"},
	})
	e, _ := reply.msg["error"].(map[string]any)
	if code, _ := e["code"].(float64); code != -32600 || !strings.Contains(fmt.Sprint(e["message"]), "already initialized") {
		t.Fatalf("second initialize: %s, want error -32600 saying the session is already initialized", reply.raw)
	}
	if list := w.request("tools/list", map[string]any{}); list.result() == nil {
		t.Fatalf("tools/list after the refused initialize: %s", list.raw)
	}
}
