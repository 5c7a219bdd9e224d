package transport

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// The HTTP transport's bound on connections. A plain limit (a listener that stops
// accepting when full) would let clients without the token fill every slot and
// lock out one with it; so past the bound a connection that has not yet carried an
// authorized request is closed to make room, oldest first.

// maxHTTPConns bounds the connections open at once; it is lowered to half the
// file descriptor limit, so workers and broker peers keep descriptors of their own.
const maxHTTPConns = 1024

// connLimit is maxHTTPConns, or half the soft limit on open files when that is lower.
func connLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur/2 < maxHTTPConns {
		return max(int(lim.Cur/2), 1)
	}
	return maxHTTPConns
}

// connGate tracks the server's connections through http.Server's ConnContext and
// ConnState hooks, which run on its accept loop, and keeps at most max open.
// Admitting a connection past the bound closes, in this order: the oldest
// connection that has not yet carried an authorized request; else the oldest idle
// keep-alive connection; else the new connection itself, since every other one is
// then serving a client with the token.
type connGate struct {
	max int

	mu    sync.Mutex
	seq   uint64
	conns map[net.Conn]*gatedConn
}

type gatedConn struct {
	conn   net.Conn
	seq    uint64         // accept order
	state  http.ConnState // guarded by connGate.mu
	proven atomic.Bool    // it has carried an authorized request
}

type gatedConnKey struct{}

func newConnGate(max int) *connGate {
	return &connGate{max: max, conns: map[net.Conn]*gatedConn{}}
}

// connContext admits c and puts its record in the connection's context, where
// the handler marks it proven.
func (g *connGate) connContext(ctx context.Context, c net.Conn) context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	gc := &gatedConn{conn: c, seq: g.seq, state: http.StateNew}
	if len(g.conns) >= g.max {
		victim := g.victim()
		if victim == nil {
			// The server's read of it fails at once and it is never served.
			c.Close()
			return ctx
		}
		delete(g.conns, victim.conn)
		victim.conn.Close()
	}
	g.conns[c] = gc
	return context.WithValue(ctx, gatedConnKey{}, gc)
}

// victim picks the connection to close for a new one; g.mu is held.
func (g *connGate) victim() *gatedConn {
	var unproven, idle *gatedConn
	for _, gc := range g.conns {
		switch {
		case !gc.proven.Load():
			if unproven == nil || gc.seq < unproven.seq {
				unproven = gc
			}
		case gc.state == http.StateIdle:
			if idle == nil || gc.seq < idle.seq {
				idle = gc
			}
		}
	}
	if unproven != nil {
		return unproven
	}
	return idle
}

// connState follows a connection's state; a closed or hijacked one leaves the gate.
func (g *connGate) connState(c net.Conn, state http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gc, ok := g.conns[c]
	if !ok {
		return
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, c)
	default:
		gc.state = state
	}
}

// prove marks the connection that carried r as serving a client with the token.
func prove(r *http.Request) {
	if gc, ok := r.Context().Value(gatedConnKey{}).(*gatedConn); ok {
		gc.proven.Store(true)
	}
}
