package transport

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stateful MCP sessions of the HTTP transport, bounded in number and in idle
// time. Clients that open sessions and never close them must not lock out the
// next client: when the table is full, the least recently used session with
// nothing in flight is closed. Closing an MCP session never touches REPL sessions
// or their state: any client reaches them again through session_id.
//
// go-sdk's own SessionTimeout is not used: it counts only POSTs as use, so it
// would close the session of a connected client that holds its GET stream open
// and has simply not called anything for a while.

const (
	// maxHTTPSessions bounds the stateful MCP sessions open at once (REPL sessions
	// are bounded by package repl).
	maxHTTPSessions = 256
	// httpSessionIdle closes a stateful MCP session that has had no request open
	// (a POST, or a GET stream) and no call in flight for this long.
	httpSessionIdle = 10 * time.Minute
)

// mcpSessions tracks each stateful MCP session's use: its HTTP requests open and
// its calls in flight, and when it was last used. Sessions enter at initialize
// (the track middleware) and leave when go-sdk no longer lists them (reconcile).
type mcpSessions struct {
	server *mcp.Server
	max    int
	idle   time.Duration
	logger *slog.Logger
	swept  func(at time.Time) // HTTPLimits.Swept

	mu       sync.Mutex
	m        map[string]*sessionUse
	reserved int // initializes admitted whose session is not yet in m
}

type sessionUse struct {
	ss       *mcp.ServerSession
	lastUsed time.Time
	calls    int // method handlers running, notifications aside
	posts    int // POSTs open that carry its id
	streams  int // GET streams open
}

// busy reports something in flight: a call running, or a POST awaiting its reply.
func (u *sessionUse) busy() bool { return u.calls > 0 || u.posts > 0 }

func newMCPSessions(server *mcp.Server, limits HTTPLimits, logger *slog.Logger) *mcpSessions {
	return &mcpSessions{server: server, max: limits.MaxSessions, idle: limits.SessionIdle, swept: limits.Swept,
		logger: logger, m: map[string]*sessionUse{}}
}

// stateful returns the session of a stateful MCP session's request; stateless
// requests run in sessions without an id.
func stateful(req mcp.Request) (*mcp.ServerSession, bool) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	return ss, ok && ss != nil && ss.ID() != ""
}

// track is receiving middleware: initialize enters a session in the table, and
// every call counts as in flight while its handler runs.
func (t *mcpSessions) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := stateful(req)
		if !ok {
			return next(ctx, method, req)
		}
		call := !strings.HasPrefix(method, "notifications/")
		t.mu.Lock()
		u := t.m[ss.ID()]
		if u == nil && method == "initialize" {
			// Its slot was reserved by admit, and is released when the
			// initialize's HTTP request ends.
			u = &sessionUse{ss: ss}
			t.m[ss.ID()] = u
		}
		if u != nil {
			u.lastUsed = time.Now()
			if call {
				u.calls++
			}
		}
		t.mu.Unlock()
		if u == nil || !call {
			return next(ctx, method, req)
		}
		defer func() {
			t.mu.Lock()
			u.calls--
			u.lastUsed = time.Now()
			t.mu.Unlock()
		}()
		return next(ctx, method, req)
	}
}

// request counts an HTTP request that carries a session id while it is served.
// False for an id the table does not hold: unknown, closed, or being closed
// (evicted or idle), which its client learns as a 404 rather than by a request
// that races the close.
func (t *mcpSessions) request(id string, stream bool) (done func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.m[id]
	if u == nil {
		return nil, false
	}
	u.lastUsed = time.Now()
	if stream {
		u.streams++
	} else {
		u.posts++
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if stream {
			u.streams--
		} else {
			u.posts--
		}
		u.lastUsed = time.Now()
	}, true
}

// admit makes room for one new session: when the table is full it closes the
// least recently used session with nothing in flight, preferring one without an
// open GET stream. False when every session is busy. The slot stays reserved
// until release, so that initializes arriving together cannot overfill the table.
func (t *mcpSessions) admit() (ok bool, release func()) {
	t.mu.Lock()
	t.reconcile()
	var victim *sessionUse
	if len(t.m)+t.reserved >= t.max {
		for _, u := range t.m {
			if !u.busy() && (victim == nil || evictBefore(u, victim)) {
				victim = u
			}
		}
		if victim == nil {
			t.mu.Unlock()
			return false, nil
		}
		delete(t.m, victim.ss.ID())
	}
	t.reserved++
	t.mu.Unlock()
	if victim != nil {
		t.logger.Warn("MCP session table full: closed the least recently used idle MCP session for a new client (its REPL sessions stay)",
			"sessions", t.max, "idle_for", time.Since(victim.lastUsed).Round(time.Second))
		// Nothing is in flight, so the close does not wait on a handler.
		victim.ss.Close()
	}
	var once sync.Once
	return true, func() {
		once.Do(func() {
			t.mu.Lock()
			t.reserved = max(t.reserved-1, 0)
			t.mu.Unlock()
		})
	}
}

// evictBefore orders sessions for eviction: one without an open GET stream (its
// client may be gone) before one with, then the least recently used.
func evictBefore(a, b *sessionUse) bool {
	if (a.streams == 0) != (b.streams == 0) {
		return a.streams == 0
	}
	return a.lastUsed.Before(b.lastUsed)
}

// reconcile drops sessions go-sdk has closed (DELETE, a failed initialize, an
// eviction); t.mu is held.
func (t *mcpSessions) reconcile() {
	live := map[string]bool{}
	for ss := range t.server.Sessions() {
		live[ss.ID()] = true
	}
	for id := range t.m {
		if !live[id] {
			delete(t.m, id)
		}
	}
}

// reap closes, until ctx is done, the sessions that have been idle for t.idle:
// no call in flight, no request open.
func (t *mcpSessions) reap(ctx context.Context) {
	tick := time.NewTicker(max(t.idle/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var idle []*mcp.ServerSession
		t.mu.Lock()
		t.reconcile()
		now := time.Now()
		for id, u := range t.m {
			if !u.busy() && u.streams == 0 && now.Sub(u.lastUsed) >= t.idle {
				delete(t.m, id)
				idle = append(idle, u.ss)
			}
		}
		t.mu.Unlock()
		for _, ss := range idle {
			ss.Close()
		}
		if t.swept != nil {
			t.swept(now)
		}
	}
}
