package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
)

// fakeServices answer every rpc as op "servers" would, and record the lifetimes
// they are told about.
type fakeServices struct {
	seen   chan RPC
	events chan string
}

func (f fakeServices) SessionOpened(id, project string) { f.events <- "opened " + id }
func (f fakeServices) SessionClosed(id, project string) { f.events <- "closed " + id }
func (f fakeServices) RunStarted(id, run string)        { f.events <- "started " + run }
func (f fakeServices) RunEnded(id, run string)          { f.events <- "ended " + run }

func (f fakeServices) KeepText(context.Context, string, string, *artifactref.Ref) (artifactref.Ref, error) {
	return artifactref.Ref{}, errNoTextStore
}

func (f fakeServices) Serve(_ context.Context, rpc RPC) (json.RawMessage, error) {
	f.seen <- rpc
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

func TestRPCRoutedToTheServicesOfTheActiveRun(t *testing.T) {
	services := fakeServices{seen: make(chan RPC, 4), events: make(chan string, 16)}
	project := t.TempDir()
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: rpcWorker(t), Project: project, Env: os.Environ(), Services: services})
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
	req := <-services.seen
	if req.RunID != res.RunID || req.SessionID != res.SessionID || req.Project != project || req.Op != "servers" {
		t.Fatalf("services saw %+v", req)
	}
	if !bytes.Equal(req.Data, []byte{0, 1, 2, 0xff}) {
		t.Errorf("the frame's data reached the services as %v, want its base64 decoded", req.Data)
	}
	m.Close(time.Second)
	var events []string
	for len(services.events) > 0 {
		events = append(events, <-services.events)
	}
	want := []string{"opened " + res.SessionID, "started " + res.RunID, "ended " + res.RunID, "closed " + res.SessionID}
	if strings.Join(events, "; ") != strings.Join(want, "; ") {
		t.Fatalf("lifetimes %q, want %q", events, want)
	}
}

func TestRPCWithoutServicesSaysSo(t *testing.T) {
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: rpcWorker(t), Project: t.TempDir(), Env: os.Environ()})
	t.Cleanup(func() { m.Close(time.Second) })
	res := m.Default().Execute(t.Context(), ExecRequest{Code: "ignored"})
	var replies map[string]rpcResultFrame
	json.Unmarshal([]byte(res.Stdout), &replies)
	if replies["mine"].Error != msgNoServices {
		t.Fatalf("own rpc without a bridge: %+v", replies["mine"])
	}
}
