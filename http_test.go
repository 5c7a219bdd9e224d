package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/mcpc"
	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real binary with --transport http: the URL line, several clients at once
// (stateful with its SSE stream open, and stateless 2026-07-28), then SIGTERM with
// a long cell running: exit 0 within 2 s and the worker gone.

var (
	urlLine       = regexp.MustCompile(`^repl-mcp: listening on (http://127\.0\.0\.1:[0-9]+/mcp)$`)
	tokenFileLine = regexp.MustCompile(`^repl-mcp: bearer token file \(send "Authorization: Bearer <its first line>"\): (/.+)$`)
)

// httpServer is a running repl-mcp --transport http.
type httpServer struct {
	cmd *exec.Cmd
	url string
	// tokenFile and token are the generated token's, when the server printed its file.
	tokenFile, token string
	// before are the stderr lines up to the URL line.
	before []string
	stderr *lineLog
	exited chan error
}

// lineLog carries the server's stderr lines.
type lineLog struct {
	lines chan string
}

func startHTTPServer(t *testing.T, dir string, env []string, args ...string) *httpServer {
	t.Helper()
	return startHTTPServerUnder(t, dir, env, nil, args...)
}

// startHTTPServerUnder starts the server through wrapper, a command line that
// execs the program and arguments it is given after its own.
func startHTTPServerUnder(t *testing.T, dir string, env, wrapper []string, args ...string) *httpServer {
	t.Helper()
	exe, err := exec.LookPath("repl-mcp")
	if err != nil {
		t.Fatalf("repl-mcp is not on PATH (TestMain puts it there): %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string{}, wrapper...), exe, "--transport", "http"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s := &httpServer{cmd: cmd, stderr: &lineLog{lines: make(chan string, 256)}, exited: make(chan error, 1)}
	go func() {
		defer r.Close()
		defer close(s.stderr.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case s.stderr.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.exited
		}
	})
	// The URL line comes last, after the token file's and any warning.
	timeout := time.After(20 * time.Second)
	for s.url == "" {
		select {
		case line := <-s.stderr.lines:
			if m := urlLine.FindStringSubmatch(line); m != nil {
				s.url = m[1]
				break
			}
			s.before = append(s.before, line)
			if len(s.before) > 2 {
				t.Fatalf("no URL line among the first stderr lines: %q", s.before)
			}
			if m := tokenFileLine.FindStringSubmatch(line); m != nil {
				s.tokenFile = m[1]
				data, err := os.ReadFile(s.tokenFile)
				if err != nil {
					t.Fatalf("the token file the server printed: %v", err)
				}
				s.token = strings.TrimSpace(string(data))
			}
		case err := <-s.exited:
			t.Fatalf("repl-mcp exited before listening (%v); stderr: %q", err, s.before)
		case <-timeout:
			t.Fatalf("no URL line on stderr within 20 s; stderr: %q", s.before)
		}
	}
	return s
}

// stop sends SIGTERM and requires exit status 0 within 5 s, then returns the rest
// of stderr.
func (s *httpServer) stop(t *testing.T) string {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("repl-mcp still running 5 s after SIGTERM")
	}
	var log strings.Builder
	timeout := time.After(5 * time.Second)
	for {
		select {
		case line, ok := <-s.stderr.lines:
			if !ok {
				return log.String()
			}
			log.WriteString(line + "\n")
		case <-timeout:
			t.Fatal("stderr still open 5 s after the server exited")
		}
	}
}

// testEnv is the environment without any inherited token, with the test's Python
// and an XDG_RUNTIME_DIR of the test's own (where generated token files go).
func testEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	py := pythons.ForTest(t)[0].Path
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "REPL_MCP_HTTP_TOKEN" && name != "REPL_MCP_PYTHON" && name != "XDG_RUNTIME_DIR" {
			env = append(env, kv)
		}
	}
	return append(append(env, "REPL_MCP_PYTHON="+py, "XDG_RUNTIME_DIR="+t.TempDir()), extra...)
}

type authTransport struct{ token string }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(t *testing.T, url, version, token string) *mcp.ClientSession {
	t.Helper()
	transport := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	if token != "" {
		transport.HTTPClient = &http.Client{Transport: authTransport{token}}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-binary-test", Version: "1"}, nil).
		Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (version %q): %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolSC(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError {
		t.Fatalf("%s: isError: %v", name, sc)
	}
	return sc
}

func field(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	return v
}

func TestHTTPBinaryServesAndStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	srv := startHTTPServer(t, dir, testEnv(t))

	a := httpClient(t, srv.url, "2025-11-25", srv.token)
	toolSC(t, a, "execute_python", map[string]any{"code": "x = 20"})
	health := toolSC(t, a, "python_health", map[string]any{})
	sid, _ := field(health, "server", "session_id").(string)
	pid, _ := field(health, "server", "python", "pid").(float64)
	if sid == "" || pid <= 0 {
		t.Fatalf("python_health after a cell: session_id %v, pid %v", sid, pid)
	}

	b := httpClient(t, srv.url, "", srv.token) // go-sdk's default: stateless 2026-07-28
	if v := b.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("default go-sdk client negotiated %q", v)
	}
	if v := toolSC(t, b, "execute_python", map[string]any{"code": "x * 2 + 2", "session_id": sid})["value"]; v != 42.0 {
		t.Fatalf("stateless client: x * 2 + 2 = %v", v)
	}

	// A long cell from a stateful client whose standalone SSE stream is open.
	c := httpClient(t, srv.url, "2025-11-25", srv.token)
	started := filepath.Join(dir, "started")
	callDone := make(chan struct{})
	go func() {
		defer close(callDone)
		c.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute_python", Arguments: map[string]any{
			// It ignores SIGINT, so stopping it takes the escalation to SIGKILL.
			"code": fmt.Sprintf("import signal, time, pathlib\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\npathlib.Path(%q).write_text('1')\ntime.sleep(60)", started)}})
	}()
	testwait.Until(t, 20*time.Second, "the long cell to start", func() bool { _, err := os.Stat(started); return err == nil })

	begin := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.exited:
		if err != nil {
			t.Fatalf("repl-mcp after SIGTERM: %v, want exit status 0", err)
		}
		d := time.Since(begin)
		if d > 2*time.Second {
			t.Fatalf("repl-mcp took %v to exit after SIGTERM, want at most 2 s", d)
		}
		t.Logf("exited %v after SIGTERM", d)
	case <-time.After(5 * time.Second):
		t.Fatal("repl-mcp still running 5 s after SIGTERM")
	}
	testwait.Until(t, 2*time.Second, fmt.Sprintf("worker %d to be gone after the server exited", int(pid)), func() bool {
		alive, _ := mcpc.PIDState(int(pid))
		return !alive
	})
	select {
	case <-callDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the client's call did not end after the server exited")
	}
}

func TestHTTPBinaryToken(t *testing.T) {
	dir := t.TempDir()
	const token = "file-token-0123456789"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startHTTPServer(t, dir, testEnv(t), "--listen", "127.0.0.1:0", "--http-token-file", tokenFile)
	resp, err := http.Post(srv.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("no token: status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	cs := httpClient(t, srv.url, "2025-11-25", token)
	if v := toolSC(t, cs, "execute_python", map[string]any{"code": "6 * 7"})["value"]; v != 42.0 {
		t.Fatalf("6 * 7 = %v", v)
	}
	if srv.tokenFile != "" {
		t.Fatalf("a token file was generated beside --http-token-file: %s", srv.tokenFile)
	}
	log := strings.Join(srv.before, "\n") + srv.stop(t)
	if strings.Contains(log, token) {
		t.Fatalf("the token appears on stderr:\n%s", log)
	}
}

// TestHTTPBinaryGeneratedToken: with no token given, every request still needs
// one: it is generated at start into a new 0600 file in a 0700 directory under
// XDG_RUNTIME_DIR, whose path (never the token) is on stderr, which another user
// cannot read, and which goes when the server exits. Falls back to the cache
// directory when the runtime directory's is not private.
func TestHTTPBinaryGeneratedToken(t *testing.T) {
	dir := t.TempDir()
	runtime := t.TempDir()
	srv := startHTTPServer(t, dir, testEnv(t, "XDG_RUNTIME_DIR="+runtime))
	if srv.tokenFile == "" || filepath.Dir(srv.tokenFile) != filepath.Join(runtime, "repl-mcp") {
		t.Fatalf("token file %q, want one in %s/repl-mcp; stderr %q", srv.tokenFile, runtime, srv.before)
	}
	for path, want := range map[string]os.FileMode{filepath.Dir(srv.tokenFile): 0o700 | os.ModeDir, srv.tokenFile: 0o600} {
		if info, err := os.Lstat(path); err != nil || info.Mode() != want {
			t.Fatalf("%s: %v (%v), want mode %v", path, info.Mode(), err, want)
		}
	}
	for _, auth := range []string{"", "Bearer not-the-token"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"import os; os.getuid()"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a cell with Authorization %q: status %d, want 401", auth, resp.StatusCode)
		}
	}
	if os.Geteuid() == 0 {
		// Another local account (nobody) cannot read the token.
		cmd := exec.Command("cat", srv.tokenFile)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if out, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(out), srv.token) {
			t.Fatalf("uid 65534 read the token file: %q, %v", out, err)
		}
	}
	cs := httpClient(t, srv.url, "2025-11-25", srv.token)
	if v := toolSC(t, cs, "execute_python", map[string]any{"code": "6 * 7"})["value"]; v != 42.0 {
		t.Fatalf("6 * 7 = %v", v)
	}
	cs.Close()
	log := strings.Join(srv.before, "\n") + srv.stop(t)
	if strings.Contains(log, srv.token) {
		t.Fatalf("the token appears on stderr:\n%s", log)
	}
	if _, err := os.Stat(srv.tokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the token file after exit: %v", err)
	}

	// The runtime directory's repl-mcp is a symbolic link: the cache directory is used.
	runtime = t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(runtime, "repl-mcp")); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	srv = startHTTPServer(t, dir, testEnv(t, "XDG_RUNTIME_DIR="+runtime, "XDG_CACHE_HOME="+cache))
	if filepath.Dir(srv.tokenFile) != filepath.Join(cache, "repl-mcp-http") {
		t.Fatalf("token file %q, want one in %s/repl-mcp-http", srv.tokenFile, cache)
	}
	srv.stop(t)
}

// TestHTTPBinaryUnauthorizedFlood: 300 connections at once, each sending a request
// without the token, against a server limited to 256 open files: each is answered
// 401 or closed to make room, none stays open; then 300 that send nothing and stay
// open; and a client with the token is served within a bound, a cell included.
func TestHTTPBinaryUnauthorizedFlood(t *testing.T) {
	dir := t.TempDir()
	limited := []string{"sh", "-c", `ulimit -n 256 && exec "$@"`, "sh"}
	srv := startHTTPServerUnder(t, dir, testEnv(t), limited)
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.url, "http://"), "/mcp")
	request := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2\r\n\r\n{}", addr)
	conns := make([]net.Conn, 0, 300)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 300 {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, conn)
		if _, err := io.WriteString(conn, request); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	end := time.Now().Add(15 * time.Second)
	unauthorized := 0
	for i, conn := range conns {
		conn.SetReadDeadline(end)
		data, err := io.ReadAll(conn) // to the server's close
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d is still open 15 s after its request (read %q)", i, data)
		}
		if strings.HasPrefix(string(data), "HTTP/1.1 401 ") {
			unauthorized++
		} else if len(data) > 0 {
			t.Fatalf("connection %d: reply %q, want a 401 or none", i, data)
		}
	}
	if unauthorized == 0 {
		t.Fatal("no connection got a 401")
	}
	t.Logf("%d of 300 got a 401, the others were closed to make room", unauthorized)
	// Then 300 that send nothing at all, and stay open on the client's side.
	for i := range 300 {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("silent connection %d: %v", i, err)
		}
		conns = append(conns, conn)
	}
	begin := time.Now()
	cs := httpClient(t, srv.url, "2025-11-25", srv.token)
	if v := toolSC(t, cs, "execute_python", map[string]any{"code": "6 * 7"})["value"]; v != 42.0 {
		t.Fatalf("6 * 7 = %v", v)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Fatalf("the client with the token was served after %v", d)
	}
	cs.Close()
	srv.stop(t)
}

// TestHTTPBinaryNoAuth: --http-no-auth serves without a token on loopback and says
// on stderr what that exposes; it is refused off loopback and beside a token.
func TestHTTPBinaryNoAuth(t *testing.T) {
	dir := t.TempDir()
	srv := startHTTPServer(t, dir, testEnv(t), "--http-no-auth")
	if srv.tokenFile != "" {
		t.Fatalf("--http-no-auth generated a token file: %s", srv.tokenFile)
	}
	if len(srv.before) != 1 || !strings.Contains(srv.before[0], "--http-no-auth: requests need no bearer token; every local user and process that can connect to "+srv.url+" can run code as uid") {
		t.Fatalf("stderr before the URL line: %q, want the --http-no-auth warning", srv.before)
	}
	cs := httpClient(t, srv.url, "2025-11-25", "")
	if v := toolSC(t, cs, "execute_python", map[string]any{"code": "6 * 7"})["value"]; v != 42.0 {
		t.Fatalf("6 * 7 = %v", v)
	}
	cs.Close()
	srv.stop(t)
}

// TestHTTPBinaryRefusals: exit 1 for a non-loopback --listen without a token, a
// token file that is not a private regular file, or --http-no-auth where it is
// not allowed; exit 2 for HTTP flags without --transport http, an invalid --listen
// or flags that exclude each other.
func TestHTTPBinaryRefusals(t *testing.T) {
	dir := t.TempDir()
	exe, err := exec.LookPath("repl-mcp")
	if err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open-token")
	if err := os.WriteFile(open, []byte("secret-token-value\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o644)
	short, long := filepath.Join(dir, "short-token"), filepath.Join(dir, "long-token")
	if err := os.WriteFile(short, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(long, []byte("secret-token"+strings.Repeat("-", 70000)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		status int
		stderr string
		env    []string
	}{
		{[]string{"--transport", "http", "--listen", "0.0.0.0:0"}, 1, "bearer token is required", nil},
		{[]string{"--transport", "http", "--listen", ":8080"}, 1, "REPL_MCP_HTTP_TOKEN", nil},
		{[]string{"--transport", "http", "--http-token-file", open}, 1, "chmod 600", nil},
		{[]string{"--transport", "http", "--http-token-file", filepath.Join(dir, "missing")}, 1, "token file", nil},
		// At once, in one line, rather than waiting for a writer.
		{[]string{"--transport", "http", "--http-token-file", fifo}, 1, "is a named pipe (FIFO), not a regular file", nil},
		{[]string{"--transport", "http", "--http-token-file", dir}, 1, "is a directory, not a regular file", nil},
		{[]string{"--listen", "127.0.0.1:0"}, 2, "--listen requires --transport http", nil},
		// An address that cannot be parsed is a bad flag value, whatever the token.
		{[]string{"--transport", "http", "--listen", "garbage"}, 2, `--listen: invalid listen address "garbage": missing port in address`, nil},
		{[]string{"--transport", "http", "--listen", "127.0.0.1:99999"}, 2, `--listen: invalid listen address "127.0.0.1:99999": invalid port`, nil},
		{[]string{"--transport", "http", "--listen", "garbage", "--http-token-file", open}, 2, "HOST:PORT", nil},
		{[]string{"--transport", "stdio", "--http-token-file", open}, 2, "requires --transport http", nil},
		{[]string{"--transport", "sse"}, 2, "stdio or http", nil},
		{[]string{"--transport", "http", "--http-no-auth", "--listen", "0.0.0.0:0"}, 1, "--http-no-auth: listen on 0.0.0.0:0: serving without a bearer token is allowed on a loopback address only", nil},
		{[]string{"--transport", "http", "--http-no-auth", "--http-token-file", open}, 2, "--http-no-auth and --http-token-file exclude each other", nil},
		{[]string{"--http-no-auth"}, 2, "--http-no-auth requires --transport http", nil},
		{[]string{"--transport", "http", "--http-no-auth"}, 1, "--http-no-auth contradicts the token in REPL_MCP_HTTP_TOKEN", []string{"REPL_MCP_HTTP_TOKEN=secret-token-value"}},
		// A short token is refused on loopback too, and a long one before it is
		// answered with 431 forever.
		{[]string{"--transport", "http"}, 1, "REPL_MCP_HTTP_TOKEN: the token has 12 characters, fewer than the 16", []string{"REPL_MCP_HTTP_TOKEN=secret-token"}},
		{[]string{"--transport", "http", "--http-token-file", short}, 1, "the token has 12 characters, fewer than the 16", nil},
		{[]string{"--transport", "http", "--http-token-file", long}, 1, "the token has 65536 characters, more than the 4096", nil},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		cmd := exec.CommandContext(ctx, exe, c.args...)
		cmd.Dir = dir
		cmd.Env = testEnv(t, c.env...)
		cmd.Stdin = strings.NewReader("")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cmd.Stdout = io.Discard
		err := cmd.Run()
		cancel()
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if status != c.status || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%v: status %d, stderr %q; want %d and %q", c.args, status, stderr.String(), c.status, c.stderr)
		}
		if c.status == 1 && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: stderr is not one line: %q", c.args, stderr.String())
		}
		if strings.Contains(stderr.String(), "secret-token-value") {
			t.Errorf("%v: the token appears on stderr", c.args)
		}
	}
}

func TestHTTPHelp(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"--help"}, strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--transport stdio|http", "--listen ADDR", "--http-token-file PATH", "-listen", "-http-token-file", "REPL_MCP_HTTP_TOKEN", "127.0.0.1:0", "--http-no-auth", "-http-no-auth"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
