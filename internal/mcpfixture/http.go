package mcpfixture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shutdownGrace bounds how long serveHTTP waits for open requests after a signal.
const shutdownGrace = 2 * time.Second

// Handler serves one fixture server, built from the environment now, over
// Streamable HTTP on any path; every session shares that server's state.
func Handler() http.Handler {
	s := newServer(configFromEnv())
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// serveHTTP serves h on 127.0.0.1 until ctx ends. Once it is listening it writes
// "http://127.0.0.1:PORT/mcp\n" to urlFile atomically. Requests inherit ctx, so
// the end of ctx cancels calls in flight and closes open streams.
func serveHTTP(ctx context.Context, urlFile string, h http.Handler) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	url := fmt.Sprintf("http://%s/mcp\n", ln.Addr())
	if err := writeFileAtomic(urlFile, []byte(url)); err != nil {
		srv.Close()
		<-served
		return fmt.Errorf("writing %s: %w", urlFile, err)
	}
	select {
	case err := <-served:
		return err // Serve never returns nil
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
