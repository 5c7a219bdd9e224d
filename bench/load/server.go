package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long a server gets after SIGTERM (or stdin EOF) before SIGKILL
// to its group.
const stopGrace = 10 * time.Second

// httpServer is a repl-mcp serving Streamable HTTP on 127.0.0.1.
type httpServer struct {
	cmd     *exec.Cmd
	url     string
	token   string
	exited  chan struct{}
	stderr  *tail
	waitErr error
	pid     int
}

// tail keeps the last bytes of a stream, for an error message.
type tail struct{ buf []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

// startHTTP starts binary as an HTTP server in dir with a token of its own and waits
// for the line that says where it listens.
func startHTTP(ctx context.Context, binary, python, dir string) (*httpServer, error) {
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(secret)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, "--transport", "http", "--listen", "127.0.0.1:0", "--http-token-file", tokenFile, "--python", python)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &httpServer{cmd: cmd, token: token, exited: make(chan struct{}), stderr: &tail{}, pid: cmd.Process.Pid}
	found := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stderr)
		for {
			line, err := r.ReadString('\n')
			s.stderr.Write([]byte(line))
			if _, url, ok := strings.Cut(line, "listening on "); ok {
				select {
				case found <- strings.TrimSpace(url):
				default:
				}
			}
			if err != nil {
				io.Copy(io.Discard, r)
				break
			}
		}
	}()
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	select {
	case s.url = <-found:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("the HTTP server exited before it listened (%v): %s", s.waitErr, s.stderr.buf)
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
	}
	s.stop()
	return nil, fmt.Errorf("the HTTP server did not say where it listens: %s", s.stderr.buf)
}

// connect opens one MCP client session to the server.
func (s *httpServer) connect(ctx context.Context) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: bearer{token: s.token, next: http.DefaultTransport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-load", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// stop sends SIGTERM, then SIGKILL to the group after stopGrace; it returns whether
// the server exited on SIGTERM.
func (s *httpServer) stop() bool {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		killGroup(s.pid) // anything it left in its group
		return true
	case <-time.After(stopGrace):
		killGroup(s.pid)
		<-s.exited
		return false
	}
}

func killGroup(pgid int) {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		fmt.Fprintf(os.Stderr, "load: kill group %d: %v\n", pgid, err)
	}
}

// stdioServer is a repl-mcp over stdio with one MCP client session.
type stdioServer struct {
	session *mcp.ClientSession
	cmd     *exec.Cmd
}

func startStdio(ctx context.Context, binary, python, dir string) (*stdioServer, error) {
	cmd := exec.Command(binary, "--python", python)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = &tail{}
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-load", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopGrace}, nil)
	if err != nil {
		if cmd.Process != nil {
			killGroup(cmd.Process.Pid)
		}
		return nil, err
	}
	return &stdioServer{session: session, cmd: cmd}, nil
}

func (s *stdioServer) pid() int { return s.cmd.Process.Pid }

// stop closes the client session (stdin EOF, then go-sdk's SIGTERM after
// stopGrace) and kills whatever is left in the server's group.
func (s *stdioServer) stop() {
	s.session.Close()
	killGroup(s.cmd.Process.Pid)
}
