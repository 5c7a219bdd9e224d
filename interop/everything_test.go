package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// everythingEntry is server-everything's launcher: `node index.js stdio|streamableHttp`.
func (s *suite) everythingEntry() string {
	return s.path("node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// startEverythingHTTP starts server-everything in its Streamable HTTP mode on a free
// port of 127.0.0.1 and returns its MCP endpoint and its log (stdout and stderr). The package listens on $PORT on every
// interface and offers no host option, so servers/loopback.mjs (a node --import
// preload) pins the listen to 127.0.0.1 and reports the port the system chose for
// PORT=0. Cleanup kills its process group.
func (s *suite) startEverythingHTTP(t *testing.T) (url string, logs *testproc.Tail) {
	t.Helper()
	cmd := exec.Command(s.node, "--import", s.path("servers", "loopback.mjs"), s.everythingEntry(), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	cmd.Dir = t.TempDir()
	inGroup(cmd)
	logs = newTail(32 << 10)
	cmd.Stdout = logs
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting server-everything: %v", err)
	}
	listening := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logs, line)
			if addr, ok := strings.CutPrefix(line, "interop-listening "); ok {
				select {
				case listening <- addr:
				default:
				}
			}
		}
		io.Copy(logs, stderr)
	}()
	t.Cleanup(func() {
		killGroup(cmd)
		wg.Wait()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server-everything (HTTP) output (last 32 KiB):\n%s", logs)
		}
	})

	var addr struct {
		Address string `json:"address"`
		Port    int    `json:"port"`
	}
	select {
	case line := <-listening:
		if err := json.Unmarshal([]byte(line), &addr); err != nil {
			t.Fatalf("server-everything reported %q: %v", line, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("server-everything did not start listening within 20 s:\n%s", logs)
	case <-t.Context().Done():
		t.Fatal("test ended before server-everything listened")
	}
	if addr.Address != "127.0.0.1" || addr.Port == 0 {
		t.Fatalf("server-everything listens on %+v, want 127.0.0.1 and a port", addr)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", addr.Port), logs
}
