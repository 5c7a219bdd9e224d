package mcpfixture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary serve as the fixture, as other packages' tests do.
func TestMain(m *testing.M) {
	if os.Getenv("MCPFIXTURE_TEST_MAIN") == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

// bounded is t's context, ended after d at the latest.
func bounded(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcpfixture-test", Version: "1"}, nil)
}

// connectors reach a server built from the environment at connect time, in process
// and over Streamable HTTP on 127.0.0.1.
var connectors = []struct {
	name    string
	connect func(*testing.T) *mcp.ClientSession
}{
	{"memory", func(t *testing.T) *mcp.ClientSession {
		ctx := bounded(t, 10*time.Second)
		ct, st := mcp.NewInMemoryTransports()
		ss, err := newServer(configFromEnv()).Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := client().Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}},
	{"http", func(t *testing.T) *mcp.ClientSession {
		srv := httptest.NewServer(Handler())
		t.Cleanup(srv.Close) // after the session closes its stream
		cs, err := client().Connect(bounded(t, 10*time.Second), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}},
}

// eachTransport runs f against a fresh server on every transport.
func eachTransport(t *testing.T, f func(*testing.T, *mcp.ClientSession)) {
	for _, c := range connectors {
		t.Run(c.name, func(t *testing.T) { f(t, c.connect(t)) })
	}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(bounded(t, 10*time.Second), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// texts is res's text blocks; any other block fails the test.
func texts(t *testing.T, res *mcp.CallToolResult) []string {
	t.Helper()
	var out []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("content block %T, want text", c)
		}
		out = append(out, tc.Text)
	}
	return out
}

func wantText(t *testing.T, res *mcp.CallToolResult, isError bool, want ...string) {
	t.Helper()
	if got := texts(t, res); res.IsError != isError || !slices.Equal(got, want) {
		t.Fatalf("result isError=%v %q, want isError=%v %q", res.IsError, got, isError, want)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// listPages lists tools page by page.
func listPages(t *testing.T, cs *mcp.ClientSession) [][]*mcp.Tool {
	t.Helper()
	ctx := bounded(t, 10*time.Second)
	var pages [][]*mcp.Tool
	cursor := ""
	for range 10 {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, res.Tools)
		if cursor = res.NextCursor; cursor == "" {
			return pages
		}
	}
	t.Fatal("more than 10 pages")
	return nil
}

func names(tools []*mcp.Tool) string {
	var ns []string
	for _, tool := range tools {
		ns = append(ns, tool.Name)
	}
	return strings.Join(ns, ",")
}

func TestCatalogueSpansExactlyTwoPages(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		pages := listPages(t, cs)
		var got []string
		for _, p := range pages {
			got = append(got, names(p))
		}
		want := []string{"big,collision,count,echo,fail", "multi,native_hold,reject_once,slow_write"}
		if !slices.Equal(got, want) {
			t.Fatalf("pages = %q, want %q", got, want)
		}
	})
}

// TestSchemasDeclareOnlyTheirOwnArguments pins every tool's input schema.
func TestSchemasDeclareOnlyTheirOwnArguments(t *testing.T) {
	want := map[string]map[string]string{
		"big":         {"size": "integer", "marker": "string"},
		"collision":   {"server": "string", "tool": "string", "timeout": "number", "arguments": "object"},
		"count":       {"marker": "string"},
		"echo":        {"text": "string"},
		"fail":        {},
		"multi":       {},
		"native_hold": {"marker": "string"},
		"reject_once": {"marker": "string"},
		"slow_write":  {"marker": "string", "timeout": "number"},
	}
	cs := connectors[0].connect(t)
	for _, page := range listPages(t, cs) {
		for _, tool := range page {
			var schema struct {
				Type                 string                       `json:"type"`
				AdditionalProperties *bool                        `json:"additionalProperties"`
				Properties           map[string]map[string]string `json:"properties"`
			}
			raw, _ := json.Marshal(tool.InputSchema)
			if err := json.Unmarshal(raw, &schema); err != nil {
				t.Fatalf("%s: %v in %s", tool.Name, err, raw)
			}
			props := map[string]string{}
			for name, p := range schema.Properties {
				props[name] = p["type"]
			}
			if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties || !reflect.DeepEqual(props, want[tool.Name]) {
				t.Errorf("%s schema = %s, want properties %v", tool.Name, raw, want[tool.Name])
			}
			delete(want, tool.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("tools not listed: %v", want)
	}
}

func TestEchoMultiFail(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		res := call(t, cs, "echo", map[string]any{"text": "hi <there>"})
		wantText(t, res, false, "hi <there>")
		if raw, _ := json.Marshal(res.StructuredContent); string(raw) != `{"text":"hi \u003cthere\u003e"}` {
			t.Fatalf("echo structured = %s", raw)
		}
		wantText(t, call(t, cs, "multi", nil), false, "first", "second")
		wantText(t, call(t, cs, "fail", nil), true, "bad arguments")
		res = call(t, cs, "echo", map[string]any{"text": "hi", "extra": 1})
		if !res.IsError || !strings.Contains(texts(t, res)[0], "invalid arguments") {
			t.Fatalf("unknown argument accepted: %q", texts(t, res))
		}
	})
}

func TestSlowWriteWritesAfterItsTimeout(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		marker := filepath.Join(t.TempDir(), "marker")
		wantText(t, call(t, cs, "slow_write", map[string]any{"marker": marker, "timeout": 0.05}), false, "wrote")
		if got := readFile(t, marker); got != "written" {
			t.Fatalf("marker = %q", got)
		}
	})
}

// TestSlowWriteCancelledLeavesANote: a cancelled slow_write writes its note beside the
// marker, never the marker, so a test can wait for the note instead of sleeping.
func TestSlowWriteCancelledLeavesANote(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		marker := filepath.Join(t.TempDir(), "marker")
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_write", Arguments: map[string]any{"marker": marker, "timeout": 60}}); err == nil {
			t.Fatal("the cancelled call succeeded")
		}
		testwait.Until(t, 10*time.Second, "the cancelled slow_write's note", func() bool {
			_, err := os.Stat(marker + ".cancelled")
			return err == nil
		})
		if got := readFile(t, marker+".cancelled"); got != "cancelled" {
			t.Fatalf("note = %q", got)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the cancelled call wrote its marker (%v)", err)
		}
	})
}

func TestCollisionEchoesItsParameters(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		args := map[string]any{"server": "srv", "tool": "tl", "timeout": 2.5, "arguments": map[string]any{"b": 1, "a": "<x>", "server": "inner"}}
		wantText(t, call(t, cs, "collision", args), false, `server=srv tool=tl timeout=2.5 arguments={"a":"<x>","b":1,"server":"inner"}`)
		wantText(t, call(t, cs, "collision", map[string]any{"timeout": 30}), false, `server= tool= timeout=30 arguments=null`)
	})
}

func TestCountIncrementsItsMarker(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		marker := filepath.Join(t.TempDir(), "count")
		wantText(t, call(t, cs, "count", map[string]any{"marker": marker}), false, "1")
		wantText(t, call(t, cs, "count", map[string]any{"marker": marker}), false, "2")
		if got := readFile(t, marker); got != "2" {
			t.Fatalf("marker = %q", got)
		}
		entries, _ := os.ReadDir(filepath.Dir(marker))
		if len(entries) != 1 {
			t.Fatalf("directory holds %d files, want only the marker", len(entries))
		}
		if res := call(t, cs, "count", nil); !res.IsError {
			t.Fatalf("count without a marker: %q", texts(t, res))
		}
	})
}

func TestBigReturnsExactlySizeBytes(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		marker := filepath.Join(t.TempDir(), "count")
		for i, c := range []struct {
			args map[string]any
			size int
		}{
			{map[string]any{"size": 1000, "marker": marker}, 1000},
			{map[string]any{"marker": marker}, 950_000},
			{map[string]any{"size": 4_000_000}, 4_000_000},
		} {
			got := texts(t, call(t, cs, "big", c.args))
			if len(got) != 1 || len(got[0]) != c.size || strings.Trim(got[0], "x") != "" {
				t.Fatalf("case %d: %d blocks, first %d bytes, want one of %d x's", i, len(got), len(got[0]), c.size)
			}
		}
		if got := readFile(t, marker); got != "2" {
			t.Fatalf("marker = %q", got)
		}
		if res := call(t, cs, "big", map[string]any{"size": 4_000_001, "marker": marker}); !res.IsError {
			t.Fatal("size over the bound accepted")
		}
		if got := readFile(t, marker); got != "2" {
			t.Fatalf("rejected call counted: marker = %q", got)
		}
	})
}

func TestRejectOnceFailsTheFirstCallOnTheWire(t *testing.T) {
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		marker := filepath.Join(t.TempDir(), "count")
		_, err := cs.CallTool(bounded(t, 10*time.Second), &mcp.CallToolParams{Name: "reject_once", Arguments: map[string]any{"marker": marker}})
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("first call: err = %v, want a JSON-RPC error -32602", err)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("rejected call counted: %v", err)
		}
		wantText(t, call(t, cs, "reject_once", map[string]any{"marker": marker}), false, "accepted")
		wantText(t, call(t, cs, "reject_once", map[string]any{"marker": marker}), false, "accepted")
		if got := readFile(t, marker); got != "2" {
			t.Fatalf("marker = %q", got)
		}
	})
}

func TestLogRecordsEveryMessage(t *testing.T) {
	for _, c := range connectors {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			t.Setenv("MCPFIXTURE_LOG", log)
			cs := c.connect(t)
			call(t, cs, "echo", map[string]any{"text": "x"})
			if _, err := cs.ListTools(bounded(t, 10*time.Second), nil); err != nil {
				t.Fatal(err)
			}
			// go-sdk v1.8 clients open with server/discover, falling back to
			// initialize and notifications/initialized where discover fails.
			pid := fmt.Sprint(os.Getpid())
			handshake := []string{pid + " server/discover", pid + " initialize", pid + " notifications/initialized"}
			want := []string{pid + " tools/call echo", pid + " tools/list"}
			got := strings.Split(strings.TrimSuffix(readFile(t, log), "\n"), "\n")
			if len(got) <= len(want) || !slices.Equal(got[len(got)-len(want):], want) {
				t.Fatalf("log = %q, want it to end %q", got, want)
			}
			for _, line := range got[:len(got)-len(want)] {
				if !slices.Contains(handshake, line) {
					t.Fatalf("log = %q: %q is not a handshake line", got, line)
				}
			}
		})
	}
}

func TestHugeAddsAToolPastOneMiB(t *testing.T) {
	t.Setenv("MCPFIXTURE_HUGE", "1")
	eachTransport(t, func(t *testing.T, cs *mcp.ClientSession) {
		pages := listPages(t, cs)
		last := pages[len(pages)-1]
		if len(pages) != 2 || names(last) != "huge,multi,native_hold,reject_once,slow_write" {
			t.Fatalf("%d pages, last %s", len(pages), names(last))
		}
		if n := len(last[0].Description); n != 2_000_000 {
			t.Fatalf("huge description = %d bytes", n)
		}
		wantText(t, call(t, cs, "huge", nil), false, "huge")
	})
}

func TestUnknownArgumentsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"--http"}, {"--http", "a", "b"}} {
		var stderr bytes.Buffer
		if code := run(args, &stderr); code != 2 || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("run(%q) = %d, stderr %q; want 2 and one line", args, code, stderr.String())
		}
	}
}

// TestHTTPModeServesUntilSIGTERM runs the fixture as a process with --http, with
// stdin at /dev/null, and stops it with SIGTERM while a session is still open.
func TestHTTPModeServesUntilSIGTERM(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	urlFile := filepath.Join(dir, "url")
	log := filepath.Join(dir, "log")
	cmd := exec.Command(exe, "--http", urlFile)
	cmd.Env = append(os.Environ(), "MCPFIXTURE_TEST_MAIN=1", "MCPFIXTURE_LOG="+log)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	ctx := bounded(t, 20*time.Second)
	var url string
	for url == "" {
		if data, err := os.ReadFile(urlFile); err == nil {
			url = string(data)
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no URL file: %v; stderr %q", ctx.Err(), stderr.String())
		case err := <-exited:
			t.Fatalf("fixture exited early: %v; stderr %q", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp\n") {
		t.Fatalf("URL file = %q", url)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files beside the URL file", len(entries)-1)
	}

	cs, err := client().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: strings.TrimSpace(url), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over http"}})
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, res, false, "over http")
	if got := readFile(t, log); !strings.Contains(got, fmt.Sprintf("%d tools/call echo\n", cmd.Process.Pid)) {
		t.Fatalf("log = %q", got)
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("fixture exit: %v; stderr %q", err, stderr.String())
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("fixture took %v to stop", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fixture still running 5 s after SIGTERM")
	}
}
