package broker

import (
	"sync"

	"github.com/iota-uz/repl-mcp/broker/argcheck"
	"golang.org/x/sync/errgroup"
)

// Set holds one broker per project directory, shared by that project's sessions
// (docs/contract.md §6.5). The root broker, of the server's own project, lives as long as
// the Set; another project's broker closes with the last session that used it.
// Different projects never share a registry or a connection; all share one
// journal and one validator.
type Set struct {
	base Options // Registry.Project is replaced per project
	root *Broker

	mu      sync.Mutex
	brokers map[string]*setEntry // by canonical project
	closed  bool
}

type setEntry struct {
	broker   *Broker
	sessions map[string]bool
}

// NewSet makes the root broker for opts.Registry.Project and loads its registry.
func NewSet(opts Options) *Set {
	if opts.Validator == nil {
		opts.Validator = argcheck.New(argcheck.Config{})
	}
	s := &Set{base: opts, brokers: map[string]*setEntry{}}
	s.root = New(opts)
	s.brokers[opts.Registry.Project] = &setEntry{broker: s.root, sessions: map[string]bool{}}
	return s
}

// Root is the broker of the server's own project (the default session's).
func (s *Set) Root() *Broker { return s.root }

// Acquire returns project's broker for session, making it on first use. It
// returns nil once the Set is closed.
func (s *Set) Acquire(session, project string) *Broker {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	e := s.brokers[project]
	if e == nil {
		opts := s.base
		opts.Registry.Project = project
		e = &setEntry{broker: New(opts), sessions: map[string]bool{}}
		s.brokers[project] = e
	}
	e.sessions[session] = true
	return e.broker
}

// Release forgets session; a project broker other than the root shuts down when
// its last session leaves.
func (s *Set) Release(session, project string) {
	s.mu.Lock()
	e := s.brokers[project]
	if e == nil || !e.sessions[session] {
		s.mu.Unlock()
		return
	}
	delete(e.sessions, session)
	last := len(e.sessions) == 0 && e.broker != s.root
	if last {
		delete(s.brokers, project)
	}
	s.mu.Unlock()
	if last {
		e.broker.Close()
	}
}

// Close shuts every broker down, in parallel.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	entries := s.brokers
	s.brokers = map[string]*setEntry{}
	s.mu.Unlock()
	var g errgroup.Group
	for _, e := range entries {
		g.Go(func() error { e.broker.Close(); return nil })
	}
	g.Wait()
}
