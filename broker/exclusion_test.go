package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/broker/journal"
	"github.com/iota-uz/repl-mcp/broker/registry"
)

// A call to a server the registry excludes says why and in which registry, and
// explain gives the same reason with the action that applies; nothing connects.
func TestExcludedServerSaysWhereAndWhy(t *testing.T) {
	tb := newTestBroker(t, nil)
	tb.writeRegistry(map[string]any{
		"fx":  fixtureEntry(t, tb.log, map[string]any{"allowedTools": []string{"echo"}}),
		"off": fixtureEntry(t, tb.log, map[string]any{"disabled": true}),
	})
	tb.refresh()
	mcpJSON := filepath.Join(tb.project, ".mcp.json")

	_, err := tb.call("off", "echo", nil)
	wantErr(t, err, `MCP server "off" is disabled in `+mcpJSON+` ("disabled": true); remove that or set it to false there, then mcp.refresh()`)
	x := tb.explain("off", nil)
	if x.Status != "not_granted" || x.Evidence != "registry_grant" ||
		x.Reason != `The registry `+mcpJSON+` sets "disabled": true for this server.` ||
		len(x.Actions) != 1 || !strings.Contains(x.Actions[0], `Remove "disabled": true from its entry in `+mcpJSON) {
		t.Fatalf("explain(off) = %+v", x)
	}
	tool := "count"
	x = tb.explain("fx", &tool)
	if x.Status != "not_granted" || x.Evidence != "allowed_tools" ||
		x.Reason != "The allowedTools of this server in "+mcpJSON+" do not list this tool." ||
		!strings.Contains(x.Actions[0], "Add the tool to the server's allowedTools in "+mcpJSON) {
		t.Fatalf("explain(fx, count) = %+v", x)
	}
	// A truly unknown name keeps the generic answer.
	_, err = tb.call("nosuch", "echo", nil)
	wantErr(t, err, "Unknown or unauthorized MCP server")
	if tb.logLines("connect") != 0 {
		t.Fatal("a refused call or explain connected a server")
	}
}

// --config is named as the flag the user passed; a foreign entry without
// brokerAllowed names its scope of ~/.claude.json.
func TestExcludedServerInConfigAndForeignScopes(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "registry.json")
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"off": {"command": "x", "disabled": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(home, ".claude.json")
	if err := os.WriteFile(claude, []byte(`{"mcpServers": {"inert": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(opts registry.Options) *Broker {
		j, _ := journal.Open(journal.Config{})
		b := New(Options{Registry: opts, Journal: j})
		t.Cleanup(b.Close)
		return b
	}
	withConfig := open(registry.Options{Project: dir, ConfigPath: config, Scope: registry.ScopeProject})
	_, err := withConfig.Call(t.Context(), CallRequest{SessionID: "s", Project: dir, RunID: "r", Server: "off", Tool: "t", Arguments: []byte(`{}`), Timeout: DefaultCallTimeout})
	wantErr(t, err, `MCP server "off" is disabled in --config `+config+` ("disabled": true)`)
	if x, _ := withConfig.Explain("off", nil); x.Reason != `The registry --config `+config+` sets "disabled": true for this server.` {
		t.Fatalf("explain(off) = %+v", x)
	}

	user := open(registry.Options{Project: dir, Home: home, Scope: registry.ScopeUser})
	_, err = user.Call(t.Context(), CallRequest{SessionID: "s", Project: dir, RunID: "r", Server: "inert", Tool: "t", Arguments: []byte(`{}`), Timeout: DefaultCallTimeout})
	wantErr(t, err, `MCP server "inert" in `+claude+` (user scope: its top-level mcpServers) is not granted to the broker; add "brokerAllowed": true to its entry there`)
	if x, _ := user.Explain("inert", nil); x.Status != "not_granted" || !strings.Contains(x.Reason, claude+` (user scope`) || !strings.Contains(x.Actions[0], `Add "brokerAllowed": true to its entry in `+claude) {
		t.Fatalf("explain(inert) = %+v", x)
	}
	if _, err := user.LoginEntry("inert"); err == nil || !strings.Contains(err.Error(), `MCP server "inert" in `+claude+` (user scope`) {
		t.Fatalf("LoginEntry(inert) = %v", err)
	}
}

// A disabled broker says which setting disabled it, in the call's error and in
// explain's reason and action.
func TestDisabledBrokerSaysWhy(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		opts   registry.Options
		by     string
		reason string
		action string
	}{
		{registry.Options{Project: dir, Scope: registry.ScopeNone}, "--mcp-scope none", "The broker is disabled by --mcp-scope none.", "--mcp-scope project"},
		{registry.Options{Project: dir, Scope: registry.ScopeProject, NoBridge: true}, "REPL_MCP_NO_BRIDGE=1", "The broker is disabled by REPL_MCP_NO_BRIDGE=1", "without REPL_MCP_NO_BRIDGE=1"},
	} {
		j, _ := journal.Open(journal.Config{})
		b := New(Options{Registry: c.opts, Journal: j})
		_, err := b.Call(t.Context(), CallRequest{SessionID: "s", Project: dir, RunID: "r", Server: "any", Tool: "t", Arguments: []byte(`{}`), Timeout: DefaultCallTimeout})
		wantErr(t, err, "MCP broker is disabled ("+c.by+"); no server can be called")
		x, _ := b.Explain("any", nil)
		if x.Status != "broker_disabled" || !strings.HasPrefix(x.Reason, c.reason) || !strings.Contains(x.Actions[0], c.action) {
			t.Errorf("explain with %s = %+v", c.by, x)
		}
		b.Close()
	}
}
