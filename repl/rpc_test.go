package repl

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBridges serves every session with one bridge that answers op "servers".
type fakeBridges struct{ seen chan BridgeRequest }

func (f fakeBridges) Acquire(string, string) Bridge { return f }
func (f fakeBridges) Release(string, string)        {}

func (f fakeBridges) Serve(_ context.Context, req BridgeRequest) (json.RawMessage, error) {
	f.seen <- req
	return json.RawMessage(`{"servers":["fixture"]}`), nil
}

func rpcWorker(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs("testdata/rpc_worker.py")
	if err != nil {
		t.Fatal(err)
	}
	return fakePython(t, "exec "+realPython(t)+" "+script)
}

func TestRPCRoutedToTheBridgeOfTheActiveRun(t *testing.T) {
	bridges := fakeBridges{seen: make(chan BridgeRequest, 4)}
	project := t.TempDir()
	m := NewManager(t.Context(), Config{Python: rpcWorker(t), Project: project, Env: os.Environ(), Bridges: bridges})
	t.Cleanup(func() { m.Close(time.Second) })
	res := m.Default().Execute(t.Context(), ExecRequest{Code: "ignored"})
	if !res.Success {
		t.Fatalf("run failed: %v", *res.Error)
	}
	var replies map[string]rpcResultFrame
	if err := json.Unmarshal([]byte(res.Stdout), &replies); err != nil {
		t.Fatalf("stdout %q: %v", res.Stdout, err)
	}
	var servers struct{ Servers []string }
	json.Unmarshal(replies["mine"].Result, &servers)
	if len(servers.Servers) != 1 || servers.Servers[0] != "fixture" || replies["mine"].Error != "" {
		t.Fatalf("own rpc: %+v", replies["mine"])
	}
	if !strings.Contains(replies["foreign"].Error, "originating active cell") {
		t.Fatalf("foreign rpc: %+v", replies["foreign"])
	}
	req := <-bridges.seen
	if req.RunID != res.RunID || req.SessionID != res.SessionID || req.Project != project || req.Op != "servers" {
		t.Fatalf("bridge saw %+v", req)
	}
}

func TestRPCWithoutBridgeSaysSo(t *testing.T) {
	m := NewManager(t.Context(), Config{Python: rpcWorker(t), Project: t.TempDir(), Env: os.Environ()})
	t.Cleanup(func() { m.Close(time.Second) })
	res := m.Default().Execute(t.Context(), ExecRequest{Code: "ignored"})
	var replies map[string]rpcResultFrame
	json.Unmarshal([]byte(res.Stdout), &replies)
	if replies["mine"].Error != msgNoBridge {
		t.Fatalf("own rpc without a bridge: %+v", replies["mine"])
	}
}
