package transport

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestConnGate: past the bound the oldest connection without an authorized
// request goes first, then the oldest idle one; a connection busy for a client
// with the token is never closed, and a new one is refused when only those remain.
func TestConnGate(t *testing.T) {
	g := newConnGate(3)
	type pipe struct {
		server, client net.Conn
		gc             *gatedConn
	}
	admit := func() *pipe {
		s, c := net.Pipe()
		ctx := g.connContext(t.Context(), s)
		gc, _ := ctx.Value(gatedConnKey{}).(*gatedConn)
		t.Cleanup(func() { s.Close(); c.Close() })
		return &pipe{s, c, gc}
	}
	closed := func(p *pipe) bool {
		p.client.SetReadDeadline(time.Now().Add(time.Second))
		_, err := p.client.Read(make([]byte, 1))
		return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
	}
	a, b, c := admit(), admit(), admit()
	for _, p := range []*pipe{b, c} {
		p.gc.proven.Store(true)
		g.connState(p.server, http.StateActive)
	}
	d := admit() // a: the only one without an authorized request
	if !closed(a) || d.gc == nil {
		t.Fatal("the unproven connection was not the one closed")
	}
	d.gc.proven.Store(true)
	g.connState(d.server, http.StateActive)
	g.connState(c.server, http.StateIdle)
	e := admit() // c: the only idle one
	if !closed(c) || e.gc == nil {
		t.Fatal("the idle connection was not the one closed")
	}
	e.gc.proven.Store(true)
	g.connState(e.server, http.StateActive)
	f := admit() // every slot busy for a client with the token: f is refused
	if f.gc != nil || !closed(f) {
		t.Fatal("a new connection was admitted over busy authorized ones")
	}
	for _, p := range []*pipe{b, d, e} {
		p.client.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := p.client.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a busy authorized connection was closed: %v", err)
		}
	}
	// A closed connection frees its slot.
	g.connState(b.server, http.StateClosed)
	if admit().gc == nil {
		t.Fatal("no slot after a connection closed")
	}
}
