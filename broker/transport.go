package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/iota-uz/repl-mcp/broker/oauth"
	"github.com/iota-uz/repl-mcp/broker/registry"
)

// Failure kinds explain reports for the last connect attempt (docs/contract.md §8.9).
const (
	failTimeout     = "connection_timeout"
	failCredentials = "credentials_missing"
	failOther       = "disconnected"
)

// transport is one downstream connection, shared by every alias whose transport
// identity (fingerprint) matches. Guarded by Broker.mu.
type transport struct {
	fp       string
	peer     *peer         // nil until connected
	dialing  chan struct{} // closed when the connect attempt in progress ends
	failedAt time.Time     // last failed connect; zero after success or refresh
	failure  string        // failTimeout, failCredentials or failOther
	users    int           // requests holding the peer
	lastUsed time.Time
	cat      *catalogue // the complete catalogue, unfiltered; nil until listed
}

// connect returns the live peer of e's transport, connecting it if needed, and a
// release to call when the request is done with it. Concurrent callers wait for
// one connect. A failed connect is remembered for 60 s; a cancelled one is not.
func (b *Broker) connect(ctx context.Context, e registry.Entry) (*transport, *peer, func(), error) {
	b.mu.Lock()
	for {
		if b.closed {
			b.mu.Unlock()
			return nil, nil, nil, errors.New(msgBrokerClosed)
		}
		t, err := b.transportLocked(e.Fingerprint)
		if err != nil {
			b.mu.Unlock()
			return nil, nil, nil, err
		}
		if t.peer != nil && t.peer.alive() {
			p := t.peer
			t.users++
			b.mu.Unlock()
			return t, p, func() { b.releaseTransport(t) }, nil
		}
		if t.peer != nil { // the session ended under us: discard it, connect anew
			b.closePeerAsync(t.peer)
			t.peer, t.cat = nil, nil
		}
		if !t.failedAt.IsZero() && time.Since(t.failedAt) < failureCooldown {
			b.mu.Unlock()
			return nil, nil, nil, errors.New(msgCooldown)
		}
		if t.dialing != nil {
			wait := t.dialing
			b.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, nil, nil, connectCtxErr(ctx)
			}
			b.mu.Lock()
			continue
		}
		t.dialing = make(chan struct{})
		b.mu.Unlock()
		p, err := b.dial(ctx, e)
		b.mu.Lock()
		close(t.dialing)
		t.dialing = nil
		if b.closed || b.transports[t.fp] != t { // shut down or dropped by a reload meanwhile
			if p != nil {
				b.closePeerAsync(p)
			}
			b.mu.Unlock()
			return nil, nil, nil, errors.New(msgUnavailable)
		}
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
				b.mu.Unlock() // the cell gave up: nothing is wrong with the server
				return nil, nil, nil, connectCtxErr(ctx)
			}
			t.failedAt, t.failure = time.Now(), failureKind(err)
			b.mu.Unlock()
			b.log.Warn("broker connect failed", "server", e.Name, "err", err)
			return nil, nil, nil, err
		}
		t.peer, t.failedAt, t.failure = p, time.Time{}, ""
	}
}

// transportLocked finds or makes the transport of fingerprint fp. When 32 exist,
// the idle one used longest ago is retired to make room.
func (b *Broker) transportLocked(fp string) (*transport, error) {
	if t := b.transports[fp]; t != nil {
		return t, nil
	}
	if len(b.transports) >= MaxTransports {
		var idle *transport
		for _, t := range b.transports {
			if t.users == 0 && t.dialing == nil && (idle == nil || t.lastUsed.Before(idle.lastUsed)) {
				idle = t
			}
		}
		if idle == nil {
			return nil, errors.New(msgTooManyPeers)
		}
		delete(b.transports, idle.fp)
		if idle.peer != nil {
			b.closePeerAsync(idle.peer)
		}
	}
	t := &transport{fp: fp, lastUsed: time.Now()}
	b.transports[fp] = t
	return t, nil
}

func (b *Broker) releaseTransport(t *transport) {
	b.mu.Lock()
	t.users--
	t.lastUsed = time.Now()
	b.mu.Unlock()
}

// dial connects e within min(ctx deadline, 30 s).
func (b *Broker) dial(ctx context.Context, e registry.Entry) (*peer, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var (
		p   *peer
		err error
	)
	if e.Transport == registry.TransportStdio {
		p, err = dialStdio(ctx, b.stdioSpec(e), b.opts.Executable, b.opts.Version)
		if err != nil {
			err = fmt.Errorf("%s (%w)", msgStdioInitFailed, err)
		}
	} else {
		p, err = dialHTTP(ctx, e, b.opts.Version, b.now)
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%s: %w", msgConnectTimeout, context.DeadlineExceeded)
	}
	return p, err
}

// stdioSpec is how a stdio entry starts: the server's environment, the entry's env
// over it and REPL_MCP_NO_BRIDGE=1 last, so a nested repl-mcp cannot broker again.
// A relative command with a slash is relative to the entry's cwd.
func (b *Broker) stdioSpec(e registry.Entry) StdioSpec {
	env := make([]string, 0, len(b.opts.Env)+len(e.Env)+1)
	for _, kv := range b.opts.Env {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := e.Env[name]; !over && name != "REPL_MCP_NO_BRIDGE" {
			env = append(env, kv)
		}
	}
	for k, v := range e.Env {
		if k != "REPL_MCP_NO_BRIDGE" {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "REPL_MCP_NO_BRIDGE=1")
	command := e.Command
	if strings.ContainsRune(command, '/') && !filepath.IsAbs(command) {
		command = filepath.Join(e.Cwd, command)
	}
	return StdioSpec{Command: command, Args: e.Args, Env: env, Dir: e.Cwd, Display: writtenCommand(e.WrittenCommand)}
}

// failureKind classifies a connect failure for explain.
func failureKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return failTimeout
	case errors.Is(err, oauth.ErrCredentialsRequired):
		return failCredentials
	default:
		return failOther
	}
}

func connectCtxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New(msgDeadlineBeforeDispatch)
	}
	return errors.New(msgCancelledBeforeDispatch)
}

// dropTransportsLocked removes the transports drop selects and returns their
// peers, to be closed once b.mu is released.
func (b *Broker) dropTransportsLocked(drop func(*transport) bool) []*peer {
	var peers []*peer
	for fp, t := range b.transports {
		if !drop(t) {
			continue
		}
		delete(b.transports, fp)
		if t.peer != nil {
			peers = append(peers, t.peer)
		}
	}
	return peers
}

// closePeerAsync closes p without holding up the caller; Close waits for it.
func (b *Broker) closePeerAsync(p *peer) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		p.close()
	}()
}

func (b *Broker) closePeersAsync(peers []*peer) {
	for _, p := range peers {
		b.closePeerAsync(p)
	}
}

// writtenCommand is how messages show a stdio command: as the registry wrote it,
// ${VAR} placeholders by name (shell quoting would show \$\{VAR}), in Go quotes
// only when a space, a quote or a control character would make it hard to read
// where it ends.
func writtenCommand(written string) string {
	if written == "" || strings.ContainsFunc(written, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '"' || r == '\''
	}) {
		return strconv.Quote(written)
	}
	return written
}
