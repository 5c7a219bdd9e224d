package transport

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bareHost is a go-sdk server with no tools and no REPL sessions behind it, for
// what a transport does before it serves: a server with real sessions is tested
// in package server.
func bareHost() Host {
	return Host{MCP: mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), CloseSessions: func(time.Duration) {}}
}

// TestHTTPListenPolicy: an address that is not HOST:PORT is invalid, whatever the
// token; a non-loopback address needs a token.
func TestHTTPListenPolicy(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		err := ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: addr}, bareHost())
		if !errors.Is(err, ErrTokenRequired) {
			t.Fatalf("listen %s without a token: %v, want ErrTokenRequired", addr, err)
		}
	}
	for _, addr := range []string{"garbage", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:-1", "[::1:80"} {
		err := ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: addr}, bareHost())
		if !errors.Is(err, ErrInvalidAddr) || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Fatalf("listen %s: %v, want ErrInvalidAddr saying HOST:PORT", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:80"} {
		err := ServeStreamableHTTP(t.Context(), HTTPConfig{Addr: addr, NoAuth: true}, bareHost())
		if !errors.Is(err, ErrNoAuthLoopbackOnly) {
			t.Fatalf("listen %s with NoAuth: %v, want ErrNoAuthLoopbackOnly", addr, err)
		}
	}
	if err := ServeStreamableHTTP(t.Context(), HTTPConfig{NoAuth: true, Token: "tok"}, bareHost()); err == nil || !strings.Contains(err.Error(), "NoAuth excludes a Token") {
		t.Fatalf("NoAuth with a token: %v", err)
	}
	// On loopback without a token, one is generated; with nowhere to write it, none is served.
	if err := ServeStreamableHTTP(t.Context(), HTTPConfig{}, bareHost()); !errors.Is(err, ErrTokenRequired) {
		t.Fatalf("no token, no NoAuth, no TokenDirs: %v, want ErrTokenRequired", err)
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:0": true, "localhost:8080": true, "[::1]:0": true, "127.1.2.3:9": true,
		"0.0.0.0:0": false, ":0": false, "192.168.1.2:80": false, "example.com:80": false,
	} {
		if got := loopbackHostPort(addr); got != want {
			t.Errorf("loopbackHostPort(%q) = %v", addr, got)
		}
	}
}
