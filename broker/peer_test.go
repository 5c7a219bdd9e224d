package broker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/internal/mcpfixture"
	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary serve as the guardian and as the fixture server.
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == guardian.Flag:
		os.Exit(guardian.Main())
	case os.Getenv("REPL_MCP_TEST_FIXTURE") == "1":
		os.Exit(mcpfixture.Main())
	}
	os.Exit(m.Run())
}

func fixtureSpec(t *testing.T) StdioSpec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return StdioSpec{Command: exe, Env: append(os.Environ(), "REPL_MCP_TEST_FIXTURE=1"), Dir: t.TempDir()}
}

func dialFixture(t *testing.T) *peer {
	t.Helper()
	p, err := dialStdio(t.Context(), fixtureSpec(t), "", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

func TestPeerListsEveryPage(t *testing.T) {
	tools, err := dialFixture(t).listTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "big,collision,count,echo,fail,multi,native_hold,reject_once,slow_write" {
		t.Fatalf("tools = %s", got)
	}
}

func TestPeerCallReturnsTheWholeEnvelope(t *testing.T) {
	p := dialFixture(t)
	res, err := p.session.CallTool(t.Context(), &mcp.CallToolParams{Name: "multi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 2 {
		t.Fatalf("content = %d blocks", len(res.Content))
	}
	res, err = p.session.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if string(raw) != `{"text":"hi"}` {
		t.Fatalf("structured = %s", raw)
	}
}

// TestCancelledCallNeverWrites: cancelling a call sends notifications/cancelled, so
// the slow tool never writes its marker, and the transport stays healthy.
func TestCancelledCallNeverWrites(t *testing.T) {
	p := dialFixture(t)
	marker := filepath.Join(t.TempDir(), "marker")
	ctx, cancel := contextWithTimeout(t, 300*time.Millisecond)
	defer cancel()
	_, err := p.session.CallTool(ctx, &mcp.CallToolParams{Name: "slow_write", Arguments: map[string]any{"marker": marker, "timeout": 1}})
	if err == nil {
		t.Fatal("cancelled call succeeded")
	}
	// The fixture's note says it gave the call up: its marker can never come.
	testwait.Until(t, 10*time.Second, "the fixture to give up the cancelled call", func() bool {
		_, err := os.Stat(marker + ".cancelled")
		return err == nil
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("cancelled call wrote its marker")
	}
	if res, err := p.session.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); err != nil || res.IsError {
		t.Fatalf("transport broken after cancel: %v", err)
	}
}

func TestCloseKillsAServerStuckInACall(t *testing.T) {
	p, err := dialStdio(t.Context(), fixtureSpec(t), "", "test")
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "pid")
	go p.session.CallTool(t.Context(), &mcp.CallToolParams{Name: "native_hold", Arguments: map[string]any{"marker": marker}})
	var pid int
	testwait.Until(t, 5*time.Second, "the fixture to report its pid", func() bool {
		data, _ := os.ReadFile(marker)
		pid, _ = strconv.Atoi(string(data))
		return pid != 0
	})
	start := time.Now()
	p.close()
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("close took %v", d)
	}
	testwait.Until(t, 2*time.Second, fmt.Sprintf("downstream pid %d to be gone after close", pid), func() bool { return !running(pid) })
}

// running reports a live process; a zombie waiting for init to reap it is gone.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || strings.Fields(string(stat))[2] != "Z"
}
