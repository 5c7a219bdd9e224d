package repl

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// spares keeps at most one pre-started, bootstrapped worker per launch (interpreter,
// project directory, environment, code cache, guardian binary), so that a reset, a
// recovery after a crash, a fresh run of a file and a new session's first cell take a
// worker that is already past its cold start. The Manager owns it; it owns its
// spares and the goroutines that start and watch them.
//
// Who starts and stops what: a launch wants a spare once a session of it has
// started its first worker (join) and until the last such session closes (leave),
// which stops the spare; an idle server therefore starts no Python. take hands the
// spare to a session, which owns it from then on (its generation starts there), and
// starts a refill in the background. A spare that dies while it waits is noticed by
// its watcher and stopped; a refill that fails is logged; either way the launch gets
// no spare for retryAfter, after which the next join or take starts one. close stops every
// spare and waits for every goroutine of the pool. Its spares start and stop as
// every worker does (lifecycle.go): through startWorker and its reaper.
type spares struct {
	off    bool // --no-spare-worker
	logger *slog.Logger
	reaper reaper // stops its spares; a spare not handed out is reaped in the background

	mu        sync.Mutex
	closed    bool
	closing   chan struct{}         // closed by close: fills give up their starts
	launches  map[string]*spareSlot // by launch.key()
	goroutine sync.WaitGroup        // fills and watchers
}

// spareSlot is one launch's place in the pool.
type spareSlot struct {
	launch launch
	users  int    // open sessions of this launch that have started a worker
	spare  *spare // the waiting worker; nil while there is none
	// filling: a goroutine is starting a spare. retryAt: no fill before then (a
	// fill failed or a spare died).
	filling bool
	retryAt time.Time
}

// spare is a waiting worker; taken closes when it leaves the pool, which ends its
// watcher.
type spare struct {
	p     *process
	taken chan struct{}

	rssMu    sync.Mutex
	rssBytes int64 // as last read, at rssAt
	rssAt    time.Time
}

// retryAfter is how long a launch whose spare failed to start, or died waiting,
// goes without one.
const retryAfter = 30 * time.Second

func newSpares(off bool, logger *slog.Logger) *spares {
	return &spares{off: off, logger: logger, launches: map[string]*spareSlot{}, closing: make(chan struct{})}
}

// join counts one more session of l that has started a worker, and fills its spare
// if it has none.
func (sp *spares) join(l launch) {
	if sp.off {
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed {
		return
	}
	slot := sp.launches[l.key()]
	if slot == nil {
		slot = &spareSlot{launch: l}
		sp.launches[l.key()] = slot
	}
	slot.users++
	sp.fillLocked(slot)
}

// leave counts one session of l fewer; the last one's leaving stops the spare.
func (sp *spares) leave(l launch) {
	if sp.off {
		return
	}
	sp.mu.Lock()
	slot := sp.launches[l.key()]
	if slot == nil {
		sp.mu.Unlock()
		return
	}
	slot.users--
	if slot.users > 0 {
		sp.mu.Unlock()
		return
	}
	delete(sp.launches, l.key())
	waiting := slot.spare
	slot.spare = nil
	sp.mu.Unlock()
	if waiting != nil {
		close(waiting.taken)
		sp.reaper.stop(waiting.p)
	}
}

// take hands over l's spare, alive and current, or returns nil, and starts the
// next one. The caller owns the worker from then on and binds it to its session. A
// spare that died, or that is stale (a package installed since, its project made
// anew, stopped, or it spoke before it was claimed: process.stale), is stopped in the
// background instead (halted at once, reaped by a goroutine close waits for).
func (sp *spares) take(l launch) *process {
	if sp.off {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock() // a spare not handed out is dropped under it, so close waits for its reap
	slot := sp.launches[l.key()]
	if slot == nil || slot.spare == nil {
		return nil
	}
	s := slot.spare
	slot.spare = nil
	close(s.taken)
	// A worker killed a moment ago may not have closed its channel yet: ask the
	// kernel too.
	dead := !s.p.alive() || exited(s.p.ready.Pid)
	stale := ""
	if !dead {
		stale = s.p.stale()
	}
	if dead {
		slot.retryAt = time.Now().Add(retryAfter) // no spare for a while
	}
	sp.fillLocked(slot)
	if !dead && stale == "" {
		return s.p
	}
	if dead {
		sp.logger.Warn("spare worker died while waiting", "pid", s.p.ready.Pid, "status", s.p.proc.ExitStatus().String())
	} else {
		sp.logger.Info("spare worker not handed out; the session starts its own", "pid", s.p.ready.Pid, "why", stale)
	}
	sp.reaper.drop(s.p)
	return nil
}

// fillLocked starts a goroutine that starts slot's next spare, unless it has one,
// one is coming, no session wants it, or its retry time has not come. sp.mu is held.
func (sp *spares) fillLocked(slot *spareSlot) {
	if sp.closed || slot.users == 0 || slot.spare != nil || slot.filling || time.Now().Before(slot.retryAt) {
		return
	}
	slot.filling = true
	sp.goroutine.Add(1)
	go func() {
		defer sp.goroutine.Done()
		sp.fill(slot)
	}()
}

// fill starts a spare for slot and puts it in place, or stops it if the slot no
// longer wants it (the pool closed, or the last session left meanwhile).
func (sp *spares) fill(slot *spareSlot) {
	p, err := startWorker(slot.launch, unclaimed{}, sp.logger, sp.closing)
	sp.mu.Lock()
	slot.filling = false
	if errors.Is(err, errSpawnAborted) {
		sp.mu.Unlock()
		return
	}
	if err != nil {
		slot.retryAt = time.Now().Add(retryAfter)
		sp.mu.Unlock()
		sp.logger.Warn("spare worker did not start; the next reset or new session starts its own", "python", slot.launch.python, "err", err)
		return
	}
	if sp.closed || sp.launches[slot.launch.key()] != slot {
		sp.mu.Unlock()
		sp.reaper.stop(p)
		return
	}
	s := &spare{p: p, taken: make(chan struct{})}
	slot.spare = s
	sp.goroutine.Add(1)
	sp.mu.Unlock()
	go func() {
		defer sp.goroutine.Done()
		sp.watch(slot, s)
	}()
}

// watch stops a spare that dies while it waits, so that it is never handed out,
// and lets the slot start another after retryAfter.
func (sp *spares) watch(slot *spareSlot, s *spare) {
	select {
	case <-s.taken:
		return
	case <-s.p.dead:
	case <-s.p.proc.Exited():
	}
	sp.mu.Lock()
	if slot.spare != s {
		sp.mu.Unlock()
		return // taken or stopped meanwhile; its new owner saw it dead
	}
	slot.spare = nil
	close(s.taken)
	slot.retryAt = time.Now().Add(retryAfter)
	sp.mu.Unlock()
	sp.logger.Warn("spare worker died while waiting", "pid", s.p.ready.Pid, "status", s.p.proc.ExitStatus().String())
	sp.reaper.stop(s.p)
}

// SpareState is the spare worker waiting for a session's launch, as health reports
// it: its memory is the server's too.
type SpareState struct {
	// Enabled is false under --no-spare-worker.
	Enabled bool `json:"enabled"`
	// Ready says a spare waits now; Pid and RSSBytes are its worker's.
	Ready    bool  `json:"ready"`
	Pid      int   `json:"pid,omitempty"`
	RSSBytes int64 `json:"rss_bytes,omitempty"`
}

// state reports l's spare.
func (sp *spares) state(l launch) SpareState {
	if sp.off {
		return SpareState{}
	}
	sp.mu.Lock()
	var s *spare
	// One that spoke while it waited will not be handed out (process.stale).
	if slot := sp.launches[l.key()]; slot != nil && slot.spare != nil && slot.spare.p.alive() && !slot.spare.p.spoke.Load() {
		s = slot.spare
	}
	sp.mu.Unlock()
	if s == nil {
		return SpareState{Enabled: true}
	}
	return SpareState{Enabled: true, Ready: true, Pid: s.p.ready.Pid, RSSBytes: s.rss()}
}

// rss is the spare's resident memory, read at most once per rssMaxAge: where there
// is no /proc, reading it runs ps, and a session list asks once per session.
func (s *spare) rss() int64 {
	s.rssMu.Lock()
	defer s.rssMu.Unlock()
	if now := time.Now(); now.Sub(s.rssAt) >= rssMaxAge {
		if rss, err := residentBytes(s.p.ready.Pid); err == nil {
			s.rssBytes, s.rssAt = rss, now
		}
	}
	return s.rssBytes
}

const rssMaxAge = time.Second

// probeInfo is what l's waiting spare said of its interpreter in its handshake, as
// a probe says it; nil when no live spare waits.
func (sp *spares) probeInfo(l launch) *ProbeInfo {
	if sp.off {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	slot := sp.launches[l.key()]
	if slot == nil || slot.spare == nil || !slot.spare.p.alive() || slot.spare.p.stale() != "" {
		return nil
	}
	r := slot.spare.p.ready
	info := &ProbeInfo{Version: r.PythonVersion, Executable: r.PythonExecutable}
	if _, err := fmt.Sscanf(r.PythonVersion, "%d.%d", &info.Major, &info.Minor); err != nil {
		return nil
	}
	return info
}

// close stops every spare and waits for the pool's goroutines; a fill still
// starting one gives its start up. Nothing is started afterwards.
func (sp *spares) close() {
	sp.mu.Lock()
	if !sp.closed {
		close(sp.closing)
	}
	sp.closed = true
	var waiting []*spare
	for key, slot := range sp.launches {
		if slot.spare != nil {
			waiting = append(waiting, slot.spare)
			close(slot.spare.taken)
			slot.spare = nil
		}
		delete(sp.launches, key)
	}
	sp.mu.Unlock()
	for _, s := range waiting {
		sp.reaper.drop(s.p) // halted at once, reaped together
	}
	sp.goroutine.Wait()
	sp.reaper.wait()
}

// unclaimed hears a spare before a session claims it. It has run no cell, so
// nothing it says belongs to a run: output is dropped and an rpc refused.
type unclaimed struct{}

func (unclaimed) onOutput(string, string, string) {}
func (unclaimed) onRPCCancel(inFrame)             {}
func (unclaimed) onRPC(p *process, f inFrame) {
	_ = p.send(rpcResultFrame{Type: "rpc_result", ID: f.ID, Error: msgRPCNotActive})
}
