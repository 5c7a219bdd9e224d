package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/broker/journal"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/internal/mcpfixture"
	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testBroker is a broker over a project whose .mcp.json the test writes; its
// fixture servers are this test binary (see TestMain).
type testBroker struct {
	*Broker
	t       *testing.T
	project string
	log     string // MCPFIXTURE_LOG of every fixture server
}

// fixtureEntry is a registry entry that starts the fixture; extra fields merge in.
func fixtureEntry(t *testing.T, log string, extra map[string]any) map[string]any {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]any{"command": exe, "env": map[string]string{"REPL_MCP_TEST_FIXTURE": "1", "MCPFIXTURE_LOG": log}}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

func newTestBroker(t *testing.T, servers map[string]any) *testBroker {
	t.Helper()
	project := t.TempDir()
	tb := &testBroker{t: t, project: project, log: filepath.Join(project, "fixture.log")}
	tb.writeRegistry(servers)
	exe, _ := os.Executable()
	j, err := journal.Open(journal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tb.Broker = New(Options{
		Registry:   registry.Options{Project: project, Scope: registry.ScopeProject, LookupEnv: os.LookupEnv},
		Journal:    j,
		Executable: exe,
		Version:    "test",
		Env:        os.Environ(),
	})
	t.Cleanup(tb.Close)
	return tb
}

func (tb *testBroker) writeRegistry(servers map[string]any) {
	tb.t.Helper()
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tb.project, ".mcp.json"), data, 0o600); err != nil {
		tb.t.Fatal(err)
	}
}

// callCtx runs one call as session s1, run r1, and decodes its envelope.
func (tb *testBroker) callCtx(ctx context.Context, server, tool string, args any, timeout time.Duration) (map[string]any, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		tb.t.Fatal(err)
	}
	out, err := tb.Call(ctx, CallRequest{SessionID: "s1", Project: tb.project, RunID: "r1", Server: server, Tool: tool, Arguments: raw, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	var env map[string]any
	if err := json.Unmarshal(out, &env); err != nil {
		tb.t.Fatalf("call result is not a JSON object: %v", err)
	}
	return env, nil
}

func (tb *testBroker) call(server, tool string, args map[string]any) (map[string]any, error) {
	return tb.callCtx(tb.t.Context(), server, tool, args, DefaultCallTimeout)
}

// explain is Explain for names the test knows to be valid.
func (tb *testBroker) explain(server string, tool *string) Explanation {
	tb.t.Helper()
	x, err := tb.Explain(server, tool)
	if err != nil {
		tb.t.Fatalf("Explain(%q): %v", server, err)
	}
	return x
}

// refresh is Refresh of a registry the test expects to load.
func (tb *testBroker) refresh() Health {
	tb.t.Helper()
	h, err := tb.Refresh()
	if err != nil {
		tb.t.Fatalf("Refresh: %v", err)
	}
	return h
}

// logLines counts the fixture's log lines for one request: "METHOD" or
// "tools/call TOOL". "connect" counts handshakes: go-sdk's client opens with
// server/discover and sends initialize only to servers that refuse it.
func (tb *testBroker) logLines(request string) int {
	data, _ := os.ReadFile(tb.log)
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		_, got, _ := strings.Cut(line, " ")
		if got == request || request == "connect" && got == "server/discover" {
			n++
		}
	}
	return n
}

func wantErr(t *testing.T, err error, substr string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Fatalf("error = %v, want it to contain %q", err, substr)
	}
}

func TestCallReturnsCompleteEnvelope(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, nil)})
	tb.refresh()
	env, err := tb.call("fx", "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if env["isError"] != false || env["structuredContent"].(map[string]any)["text"] != "hi" {
		t.Fatalf("envelope = %v", env)
	}
	env, err = tb.call("fx", "multi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(env["content"].([]any)); n != 2 {
		t.Fatalf("multi gave %d blocks", n)
	}
	env, err = tb.call("fx", "fail", nil)
	if err != nil || env["isError"] != true {
		t.Fatalf("fail: %v %v", env, err)
	}
	recs := tb.opts.Journal.Records()
	if len(recs) != 3 || recs[0].Status != journal.StatusCompleted || recs[2].Status != journal.StatusToolError || recs[0].SessionID != "s1" || recs[0].RunID != "r1" {
		t.Fatalf("journal = %+v", recs)
	}
}

func TestAllowlistDenialConnectsNothing(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, map[string]any{"allowedTools": []string{"echo"}})})
	tb.refresh()
	_, err := tb.call("fx", "count", map[string]any{"marker": filepath.Join(tb.project, "m")})
	wantErr(t, err, "Tool denied by broker allowedTools policy")
	if tb.logLines("connect") != 0 || tb.Health().ConnectedTransports != 0 {
		t.Fatal("a denied call connected the server")
	}
	l, err := tb.ListTools(t.Context(), "fx", DefaultListTimeout)
	if err != nil {
		t.Fatal(err)
	}
	tools := l.Tools
	if l.Fresh <= 0 || l.Fresh > catalogueTTL {
		t.Errorf("a catalogue listed now is fresh for %v, want (0, %v]", l.Fresh, catalogueTTL)
	}
	if len(tools) != 1 || !strings.Contains(string(tools[0]), `"name":"echo"`) {
		t.Fatalf("filtered catalogue = %s", tools)
	}
}

func TestAliasesShareOneTransport(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{
		"a": fixtureEntry(t, tb.log, map[string]any{"allowedTools": []string{"echo"}}),
		"b": fixtureEntry(t, tb.log, map[string]any{"allowedTools": []string{"multi"}}),
	})
	tb.refresh()
	if _, err := tb.call("a", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.call("b", "multi", nil); err != nil {
		t.Fatal(err)
	}
	_, err := tb.call("b", "echo", map[string]any{"text": "x"})
	wantErr(t, err, "allowedTools")
	if n := tb.logLines("connect"); n != 1 {
		t.Fatalf("%d handshakes, want 1", n)
	}
	if h := tb.Health(); h.ConnectedTransports != 1 || h.ConfiguredServers != 2 {
		t.Fatalf("health = %+v", h)
	}
}

func TestProtocolErrorKeepsSharedTransport(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, nil)})
	tb.refresh()
	marker := filepath.Join(tb.project, "count")
	_, err := tb.call("fx", "reject_once", map[string]any{"marker": marker})
	wantErr(t, err, "-32602")
	wantErr(t, err, "request was not retried")
	if _, err := tb.call("fx", "reject_once", map[string]any{"marker": marker}); err != nil {
		t.Fatal(err)
	}
	if n := tb.logLines("connect"); n != 1 {
		t.Fatalf("%d handshakes, want 1", n)
	}
	recs := tb.opts.Journal.Records()
	if len(recs) != 2 || recs[0].Status != journal.StatusOutcomeUnknown || recs[1].Status != journal.StatusCompleted {
		t.Fatalf("journal = %+v", recs)
	}
	if data, _ := os.ReadFile(marker); string(data) != "1" {
		t.Fatalf("effect count = %q, want 1", data)
	}
}

func TestLargeResultIsRecordedNotDelivered(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, nil)})
	tb.refresh()
	marker := filepath.Join(tb.project, "count")
	_, err := tb.call("fx", "big", map[string]any{"size": 950000, "marker": marker})
	wantErr(t, err, "known outcome for call")
	recs := tb.opts.Journal.Records()
	if len(recs) != 1 || recs[0].Status != journal.StatusCompleted || !strings.Contains(err.Error(), recs[0].ID) {
		t.Fatalf("journal = %+v, err = %v", recs, err)
	}
	if _, err := tb.call("fx", "big", map[string]any{"size": 1000, "marker": marker}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(marker); string(data) != "2" {
		t.Fatalf("effect count = %q, want 2 (no retry)", data)
	}
	if n := tb.logLines("connect"); n != 1 {
		t.Fatalf("%d handshakes, want 1", n)
	}
}

func TestCancelledCallNeverWritesWhileOtherDoes(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, nil)})
	tb.refresh()
	if _, err := tb.call("fx", "echo", map[string]any{"text": "warm"}); err != nil {
		t.Fatal(err)
	}
	cancelled, kept := filepath.Join(tb.project, "cancelled"), filepath.Join(tb.project, "kept")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var cancelErr, keptErr error
	wg.Go(func() {
		_, cancelErr = tb.callCtx(ctx, "fx", "slow_write", map[string]any{"marker": cancelled, "timeout": 1.5}, DefaultCallTimeout)
	})
	wg.Go(func() {
		_, keptErr = tb.call("fx", "slow_write", map[string]any{"marker": kept, "timeout": 1.5})
	})
	testwait.Until(t, 20*time.Second, "two slow_write calls to reach the fixture", func() bool { return tb.logLines("tools/call slow_write") == 2 })
	cancel()
	wg.Wait()
	wantErr(t, cancelErr, "cancelled")
	if keptErr != nil {
		t.Fatal(keptErr)
	}
	// The fixture's note says it gave the cancelled call up: its marker can never come.
	testwait.Until(t, 10*time.Second, "the fixture to give up the cancelled call", func() bool {
		_, err := os.Stat(cancelled + ".cancelled")
		return err == nil
	})
	if _, err := os.Stat(cancelled); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the cancelled call wrote its marker")
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatal("the surviving call did not write")
	}
	statuses := map[journal.Status]int{}
	for _, r := range tb.opts.Journal.Records() {
		statuses[r.Status]++
	}
	if statuses[journal.StatusCompleted] != 2 || statuses[journal.StatusOutcomeUnknown] != 1 {
		t.Fatalf("journal statuses = %v", statuses)
	}
	if tb.Health().ConnectedTransports != 1 {
		t.Fatal("the cancel tore down the shared transport")
	}
}

func TestBadRegistryFailsClosedUntilRefresh(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"web": map[string]any{"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": map[string]string{"Authorization": "Bearer "}}})
	h, err := tb.Refresh()
	wantErr(t, err, "MCP configuration error: Server web: empty authorization header")
	if h.ConfigurationError == nil || !strings.Contains(*h.ConfigurationError, "authorization") {
		t.Fatalf("health = %+v", h)
	}
	_, err = tb.Servers()
	wantErr(t, err, "MCP configuration error")
	x := tb.explain("web", nil)
	if x.Status != "credentials_missing" || x.NetworkProbePerformed {
		t.Fatalf("explain = %+v", x)
	}
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, nil)})
	if h := tb.refresh(); h.ConfigurationError != nil || h.ConfiguredServers != 1 {
		t.Fatalf("health after repair = %+v", h)
	}
	names, err := tb.Servers()
	if err != nil || fmt.Sprint(names) != "[fx]" {
		t.Fatalf("servers = %v, %v", names, err)
	}
}

func TestExplainNeverConnects(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{
		"fx":  fixtureEntry(t, tb.log, map[string]any{"allowedTools": []string{"echo", "ghost"}}),
		"off": fixtureEntry(t, tb.log, map[string]any{"disabled": true}),
	})
	tb.refresh()
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		server string
		tool   *string
		want   string
	}{
		{"off", nil, "not_granted"},
		{"nope", nil, "server_absent"},
		{"fx", str("count"), "not_granted"},
		{"fx", nil, "disconnected"},
	} {
		if x := tb.explain(c.server, c.tool); x.Status != c.want {
			t.Errorf("explain(%s) = %s, want %s", c.server, x.Status, c.want)
		}
	}
	if tb.logLines("connect") != 0 {
		t.Fatal("explain connected a server")
	}
	if _, err := tb.ListTools(t.Context(), "fx", DefaultListTimeout); err != nil {
		t.Fatal(err)
	}
	if x := tb.explain("fx", str("echo")); x.Status != "ready" || !x.Connected {
		t.Fatalf("explain after listing = %+v", x)
	}
	if x := tb.explain("fx", str("ghost")); x.Status != "tool_missing" || x.Evidence != "cached_catalogue" {
		t.Fatalf("explain ghost = %+v", x)
	}
	_, err := tb.Explain("fx", str("bad\x00tool"))
	wantErr(t, err, "MCP tool name must be a string of 1..400 bytes without control characters")
	_, err = tb.Explain("", nil)
	wantErr(t, err, "MCP server name must be a string of 1..200 bytes without control characters")
}

func TestExplainAbsentRegistryAndDisabled(t *testing.T) {
	tb := newTestBroker(t, nil)
	os.Remove(filepath.Join(tb.project, ".mcp.json"))
	tb.refresh()
	x := tb.explain("anything", nil)
	if x.Status != "registry_absent" || x.HostClientRoute.DiscoverableByBroker || x.Provenance.Project != tb.project {
		t.Fatalf("explain = %+v", x)
	}
	j, _ := journal.Open(journal.Config{})
	off := New(Options{Registry: registry.Options{Project: tb.project, Scope: registry.ScopeNone}, Journal: j})
	defer off.Close()
	if x, err := off.Explain("anything", nil); err != nil || x.Status != "broker_disabled" {
		t.Fatalf("explain with scope none = %+v", x)
	}
}

func TestFailedConnectIsCooledDown(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"gone": map[string]any{"command": filepath.Join(tb.project, "missing-server")}})
	tb.refresh()
	_, err := tb.call("gone", "echo", nil)
	wantErr(t, err, "MCP transport initialization failed")
	_, err = tb.call("gone", "echo", nil)
	wantErr(t, err, "recently failed")
	if x := tb.explain("gone", nil); x.Status != "disconnected" || x.Evidence != "last_connection_attempt" {
		t.Fatalf("explain = %+v", x)
	}
	tb.refresh()
	_, err = tb.call("gone", "echo", nil)
	wantErr(t, err, "MCP transport initialization failed")
}

func TestArgumentsCheckedBeforeDispatch(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, nil)})
	tb.refresh()
	_, err := tb.call("fx", "echo", map[string]any{"text": 5})
	wantErr(t, err, "MCP arguments violate inputSchema")
	_, err = tb.call("fx", "nosuch", nil)
	wantErr(t, err, "Unknown or unauthorized MCP tool")
	_, err = tb.call("nosuch", "echo", nil)
	wantErr(t, err, "Unknown or unauthorized MCP server")
	_, err = tb.callCtx(t.Context(), "fx", "echo", []int{1}, DefaultCallTimeout)
	wantErr(t, err, "arguments must be a JSON object")
	_, err = tb.call("f\x01x", "echo", nil)
	wantErr(t, err, "control characters")
	_, err = tb.callCtx(t.Context(), "fx", "echo", nil, 0)
	wantErr(t, err, "MCP timeout must be between 0.01 and 3600 seconds")
	if tb.logLines("tools/call echo") != 0 || len(tb.opts.Journal.Records()) != 0 {
		t.Fatal("a refused call reached the server or the journal")
	}
}

func TestSetSharesAndClosesProjectBrokers(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	j, _ := journal.Open(journal.Config{})
	s := NewSet(Options{Registry: registry.Options{Project: root, Scope: registry.ScopeProject}, Journal: j})
	defer s.Close()
	a, b := s.Acquire("s1", other), s.Acquire("s2", other)
	if a != b || a == s.Root() {
		t.Fatal("sessions of one project must share a broker, apart from the root's")
	}
	s.Release("s1", other)
	if a.Health().Provenance.Project != other {
		t.Fatal("wrong project")
	}
	s.Release("s2", other)
	if _, err := a.Servers(); err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Fatalf("broker after its last session: %v", err)
	}
	if s.Acquire("s3", other) == a {
		t.Fatal("a closed broker was handed out again")
	}
}

func TestHTTPServerThroughBroker(t *testing.T) {
	project := t.TempDir()
	log := filepath.Join(project, "fixture.log")
	t.Setenv("MCPFIXTURE_LOG", log)
	srv := httptest.NewServer(mcpfixture.Handler())
	tb := newTestBroker(t, map[string]any{"web": map[string]any{"type": "http", "url": srv.URL + "/mcp", "headers": map[string]string{"X-Test": "1"}}})
	tb.log = log
	env, err := tb.call("web", "echo", map[string]any{"text": "over http"})
	if err != nil || env["structuredContent"].(map[string]any)["text"] != "over http" {
		t.Fatalf("echo = %v, %v", env, err)
	}
	marker := filepath.Join(project, "count")
	_, err = tb.call("web", "reject_once", map[string]any{"marker": marker})
	wantErr(t, err, "-32602")
	if _, err := tb.call("web", "reject_once", map[string]any{"marker": marker}); err != nil {
		t.Fatal(err)
	}
	if n := tb.logLines("initialize"); n != 1 {
		t.Fatalf("%d initialize requests, want 1", n)
	}
	srv.CloseClientConnections()
	srv.Close()
	_, err = tb.call("web", "echo", map[string]any{"text": "gone"})
	wantErr(t, err, "request was not retried")
	if x := tb.explain("web", nil); x.Connected {
		t.Fatal("a peer whose server went away is still reported connected")
	}
}

func TestConcurrentReloadsShareOneLoad(t *testing.T) {
	tb := newTestBroker(t, map[string]any{"fx": fixtureEntry(t, filepath.Join(t.TempDir(), "log"), nil)})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- tb.reload() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a concurrent reload failed: %v", err)
		}
	}
	if h := tb.Health(); h.ConfigurationError != nil || h.ConfiguredServers != 1 {
		t.Fatalf("health = %+v", h)
	}
}

func TestRequestsBeyond32AreQueuedThenRefused(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{"fx": fixtureEntry(t, tb.log, nil)})
	tb.refresh()
	var wg sync.WaitGroup
	for i := range MaxConcurrentRequests {
		wg.Go(func() {
			tb.call("fx", "slow_write", map[string]any{"marker": filepath.Join(tb.project, fmt.Sprint("m", i)), "timeout": 3})
		})
	}
	testwait.Until(t, 20*time.Second, "every request slot's call to reach the fixture", func() bool {
		return tb.logLines("tools/call slow_write") == MaxConcurrentRequests
	})
	_, err := tb.callCtx(t.Context(), "fx", "echo", map[string]any{"text": "x"}, 500*time.Millisecond)
	wantErr(t, err, "MCP request budget exceeded while queued")
	wg.Wait()
	if _, err := tb.call("fx", "echo", map[string]any{"text": "after"}); err != nil {
		t.Fatal(err)
	}
}

func TestTransportLimitRetiresTheIdleOne(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for i := range MaxTransports {
		tb.transports[fmt.Sprint(i)] = &transport{fp: fmt.Sprint(i), users: 1, lastUsed: time.Now()}
	}
	if _, err := tb.transportLocked("new"); err == nil || !strings.Contains(err.Error(), "32 active transports") {
		t.Fatalf("33rd transport with none idle: %v", err)
	}
	tb.transports["7"].users = 0
	if _, err := tb.transportLocked("new"); err != nil {
		t.Fatal(err)
	}
	if _, kept := tb.transports["7"]; kept || len(tb.transports) != MaxTransports {
		t.Fatal("the idle transport was not the one retired")
	}
}

func TestEnvelopeAlwaysCarriesIsError(t *testing.T) {
	for _, c := range []struct {
		res  *mcp.CallToolResult
		want string
	}{
		{&mcp.CallToolResult{}, `{"content":[],"isError":false}`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: map[string]any{"a": 1}},
			`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1},"isError":false}`},
		{&mcp.CallToolResult{IsError: true}, `{"content":[],"isError":true}`},
	} {
		got, err := envelopeJSON(c.res)
		if err != nil || string(got) != c.want {
			t.Errorf("envelopeJSON = %s, %v; want %s", got, err, c.want)
		}
	}
}
