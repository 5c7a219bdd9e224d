package repl

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"

	"github.com/iota-uz/repl-mcp/guardian"
)

// This file is the one place a worker process starts and stops. Every worker starts
// through startWorker and stops through a reaper: a session's persistent and fresh
// workers through its lifecycle, the spare pool's (spare.go) while they wait. So the
// rules are the same for all: a worker starts from its launch, with the limits the
// Config brought, under a guardian of its own, in the launch's sandbox with that
// policy's own code cache, its handshake waited for; it stops by halt, then reap,
// and whoever halts it without waiting for the reap waits for it before it closes.
// A worker leaves a snapshot directory only when it was a session's (retired); a
// spare holds none until a session claims it.

// startWorker starts a worker from launch l and returns it past its handshake;
// events and logger hear it first, and abort (nil for never) gives up a start still
// waiting for its handshake. A launch without limits (a Config without OpLimits)
// starts none.
func startWorker(l launch, events workerEvents, logger *slog.Logger, abort <-chan struct{}) (*process, error) {
	if l.limits == "" {
		return nil, errNoOpLimits
	}
	python, err := exec.LookPath(l.python)
	if err != nil {
		return nil, fmt.Errorf(msgCannotRun, l.python, err)
	}
	cache, policy := sandboxedCache(l.cache, l.policy)
	child := guardian.Spec{Program: python, Args: workerArgs(), Env: workerEnv(l.env, cache, l.limits), Dir: l.dir, Sandbox: policy}
	return spawn(spawnSpec{exe: l.exe, child: child, python: l.python, logger: logger, events: events, abort: abort})
}

// reaper stops workers the one way there is: halt (no code of the worker runs any
// more), then reap (the guardian and the worker's pipes; process.halt, process.reap).
// stop returns once the worker is reaped; drop returns once it is halted and reaps
// it on a goroutine that wait waits for. Its owner (a session's lifecycle, the spare
// pool) waits before it is done.
type reaper struct{ reaping sync.WaitGroup }

func (r *reaper) stop(p *process) {
	p.halt()
	p.reap()
}

func (r *reaper) drop(p *process) {
	p.halt()
	r.reaping.Go(p.reap)
}

func (r *reaper) wait() { r.reaping.Wait() }

// lifecycle is a session's worker over its successive lives, the one value that
// starts and stops its processes (go-plugin's Client is the model: one value with one
// mutex that owns the process from start to stop). It starts the worker (the launch's
// spare when one waits, else a new one, through startWorker), moves it through the
// states of state.go's table together with its generation, lets a caller wait until
// no start or stop is in progress (settled), notices an idle worker's death (watch),
// and stops it. It also starts and drops the session's fresh workers, which live
// outside the table. The Session holds one (Session.worker); nothing else starts or
// stops its workers.
//
// A worker stops one way, whoever asks: halt, then reap (reaper). stop returns once
// the worker is reaped; reset and drop return once it is halted and reap it on a
// goroutine close waits for. The session's own worker leaves the table only through
// retire, which moves it through stopping.
type lifecycle struct {
	launch launch
	env    sessionEnv // a project .venv is checked at every start
	spares *spares    // the manager's pool: spawn takes from it
	events workerEvents
	logger *slog.Logger

	watchers sync.WaitGroup // one per worker: notices an idle worker's death
	reaper   reaper         // stops its workers; those reset or dropped are reaped in the background

	mu sync.Mutex
	// state, proc and generation change together; the state only through setState.
	// proc is set exactly in ready and busy.
	state      workerState
	changed    chan struct{} // closed and replaced at every state change
	proc       *process
	generation uint64
	lastReady  *Ready // the handshake of the latest worker; nil before the first
	// joined: a worker has started, so the launch keeps a spare (spares.join) until
	// close.
	joined bool
	// base is the generation the session's first worker starts above: the highest its
	// project's earlier server lifetimes used (durable.go); 0 without a state directory.
	base uint64
	// gone says why the last worker left (a Reset* reason; "" for none, or a close),
	// and, before the first start, why the session's first worker is not its first
	// (ResetRestart). reason is the current worker's, from gone at its start, and
	// announce whether its first result is still to be reported.
	gone, reason string
	announce     bool
	// onGone hears of a worker that left the table (the session's snapshots let go of
	// its directory); nil for none.
	onGone func(p *process)
	// policySet: a call has set the launch's sandbox policy (inherit-codex,
	// usePolicy).
	policySet bool
}

func newLifecycle(l launch, env sessionEnv, pool *spares, events workerEvents, logger *slog.Logger) *lifecycle {
	return &lifecycle{launch: l, env: env, spares: pool, events: events, logger: logger, changed: make(chan struct{})}
}

// errStartRefused is a start asked of a worker that is neither stopped nor dead: a
// bug in the supervisor, since only the run that holds the session's slot starts one.
var errStartRefused = errors.New(msgCrashed)

// workerView is the worker as one moment saw it, read together under l.mu.
type workerView struct {
	state      workerState
	proc       *process
	generation uint64
	lastReady  *Ready
}

// view is the worker now, whatever is in progress.
func (l *lifecycle) view() workerView {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.viewLocked()
}

func (l *lifecycle) viewLocked() workerView {
	return workerView{state: l.state, proc: l.proc, generation: l.generation, lastReady: l.lastReady}
}

// currentGeneration is the generation of the latest worker (0 before the first).
func (l *lifecycle) currentGeneration() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.generation
}

// nextLocked is the generation the session's next worker gets: one past the last,
// and past the project's highest of earlier server lifetimes (base), so that
// generations never repeat (docs/contract.md §6.3). l.mu is held.
func (l *lifecycle) nextLocked() uint64 { return max(l.generation, l.base) + 1 }

// upcoming is the generation a run admitted now executes in: the live worker's,
// unless the run resets it, the worker is gone or going, or none started yet, when
// it is the next worker's (nextLocked). python_start names it before the run has
// claimed a worker; a worker that dies in between makes it one more.
func (l *lifecycle) upcoming(reset bool) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if (l.state == workerReady || l.state == workerBusy) && !reset && l.proc != nil && l.proc.alive() {
		return l.generation
	}
	return l.nextLocked()
}

// setState moves the worker to next and wakes whoever waits for a change. A move the
// table does not allow is a bug in the supervisor: it is refused and logged, never
// applied. l.mu is held.
func (l *lifecycle) setState(next workerState) bool {
	if !l.state.allows(next) {
		l.logger.Error("refused worker state change", "from", l.state, "to", next)
		return false
	}
	l.state = next
	close(l.changed)
	l.changed = make(chan struct{})
	return true
}

// settled waits until no start or stop is in progress and returns the worker then;
// false if done closes first. It returns without l.mu, so what it saw may change at
// once: a caller that acts on it does so through a move that re-checks under l.mu
// (take, idle, retire, which only stops a process no longer the session's).
func (l *lifecycle) settled(done <-chan struct{}) (workerView, bool) {
	l.mu.Lock()
	for l.state == workerStarting || l.state == workerStopping {
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-done:
			return workerView{}, false
		}
		l.mu.Lock()
	}
	w := l.viewLocked()
	l.mu.Unlock()
	return w, true
}

// start starts the worker: stopped or dead, then starting, then ready with the next
// generation, watched from then on. A start that fails leaves no worker and the state
// it found; errStartRefused says there was a worker already.
func (l *lifecycle) start() error {
	l.mu.Lock()
	before := l.state
	if !l.setState(workerStarting) {
		l.mu.Unlock()
		return errStartRefused
	}
	l.mu.Unlock()
	p, err := l.spawn()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.setState(before)
		return err
	}
	l.proc = p
	l.generation = l.nextLocked()
	l.reason, l.gone, l.announce = l.gone, "", true
	ready := p.ready
	l.lastReady = &ready
	l.setState(workerReady)
	l.watchers.Add(1)
	go l.watch(p)
	return nil
}

// take moves the worker p from ready to busy for the run that holds the session's
// slot, unless p is no longer the session's ready worker.
func (l *lifecycle) take(p *process) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.proc == p && l.state == workerReady && l.setState(workerBusy)
}

// idle moves the worker p back from busy to ready once its run ended, unless p was
// stopped meanwhile.
func (l *lifecycle) idle(p *process) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc == p && l.state == workerBusy {
		l.setState(workerReady)
	}
}

// watch notices the death of an idle worker (a thread that called os._exit after its
// cell, an outside kill) and stops it, so that the session reports it dead and the
// next run knows its variables are gone. A busy worker's death is its run's to
// handle; watch waits for the run to end and looks again.
func (l *lifecycle) watch(p *process) {
	defer l.watchers.Done()
	select {
	case <-p.dead:
	case <-p.proc.Exited():
	case <-p.stopping:
		return
	}
	for {
		l.mu.Lock()
		if l.proc != p {
			l.mu.Unlock()
			return
		}
		if l.state == workerReady {
			l.mu.Unlock()
			l.stop(p, workerDead)
			return
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-p.stopped:
			return
		}
	}
}

// stop stops p and returns once it is reaped: the session's worker goes through
// stopping to after (stopped on purpose, dead when its variables are lost); any other
// worker (one already replaced) is simply stopped.
func (l *lifecycle) stop(p *process, after workerState) {
	reason := ""
	if after == workerDead {
		reason = ResetLost
	}
	l.retire(p, after, reason, func() { l.reaper.stop(p) })
}

// release stops the idle worker p, its namespace saved (--idle-release): stopped, or
// dead when some of its variables could not be saved. It does nothing, and returns
// false, unless p is the session's worker and idle.
func (l *lifecycle) release(p *process, lost bool) bool {
	after := workerStopped
	if lost {
		after = workerDead
	}
	l.mu.Lock()
	// Checked and moved at once: a run that took it meanwhile keeps it.
	if l.proc != p || l.state != workerReady || !l.setState(workerStopping) {
		l.mu.Unlock()
		return false
	}
	l.mu.Unlock()
	l.reaper.stop(p)
	l.retired(p, after, ResetReleased)
	return true
}

// announced reports, once per worker, that p's first result is being made, and why p
// is new (a Reset* reason, "" for a session's first worker).
func (l *lifecycle) announced(p *process) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc != p || !l.announce {
		return false, ""
	}
	l.announce = false
	return true, l.reason
}

// reset stops the session's worker p for a reset as stop does, except that it
// returns once p is halted (no code of it runs any more) and leaves the reaping to a
// goroutine close waits for: the reset's cell, on the spare, then does not wait for
// the kernel to free the old worker's memory.
func (l *lifecycle) reset(p *process) {
	l.retire(p, workerStopped, ResetReset, func() { l.reaper.drop(p) })
}

// retire moves the session's worker p through stopping to after around stop, or just
// stops p when it is not the session's worker (any more); reason says why it left
// (gone). It reports whether p was the session's worker.
func (l *lifecycle) retire(p *process, after workerState, reason string, stop func()) bool {
	l.mu.Lock()
	for l.proc == p && l.state == workerStopping {
		// Another goroutine is stopping it: wait for the outcome.
		changed := l.changed
		l.mu.Unlock()
		<-changed
		l.mu.Lock()
	}
	if l.proc != p || !l.setState(workerStopping) {
		l.mu.Unlock()
		stop()
		return false
	}
	l.mu.Unlock()
	stop()
	l.retired(p, after, reason)
	return true
}

// retired ends the stop of the session's worker p, which retire or release moved to
// stopping: p leaves the table for after, with why it left.
func (l *lifecycle) retired(p *process, after workerState, reason string) {
	if l.onGone != nil {
		l.onGone(p)
	}
	l.mu.Lock()
	l.proc = nil
	l.gone = reason
	l.setState(after)
	l.mu.Unlock()
}

// startFresh starts a worker outside the table, for one fresh run: the spare when
// one waits. Its run drops it when it ends.
func (l *lifecycle) startFresh() (*process, error) {
	return l.spawn()
}

// drop halts p, a fresh run's worker, and reaps it on a goroutine close waits for.
func (l *lifecycle) drop(p *process) { l.reaper.drop(p) }

// spawn gives the session a new worker: the spare of its launch when one waits
// (spare.go), else one started now. A project .venv is checked at every start, not
// only when the session was made: the default session's is never checked before (the
// server starts and answers health with a broken one), and one that broke meanwhile,
// or was repaired, is told apart before a cryptic exec failure. The session's first
// worker makes its launch keep a spare from then on.
func (l *lifecycle) spawn() (*process, error) {
	if l.env.source == SourceProjectVenv {
		if err := checkVenv(l.env.python, l.env.venvFix); err != nil {
			return nil, err
		}
	}
	launch := l.currentLaunch()
	p := l.spares.take(launch)
	if p != nil {
		p.bind(l.events, l.logger)
	} else {
		var err error
		if p, err = startWorker(launch, l.events, l.logger, nil); err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	join := !l.joined && l.launch.key() == launch.key()
	if join {
		l.joined = true
	}
	l.mu.Unlock()
	if join {
		l.spares.join(launch)
	}
	return p, nil
}

// spare is the spare worker waiting for the session's launch, as health reports it.
func (l *lifecycle) spare() SpareState { return l.spares.state(l.currentLaunch()) }

// close stops the worker, once no run uses it any more, and returns when every
// worker the session had is reaped; the launch's claim on a spare ends with it.
func (l *lifecycle) close() {
	if w, _ := l.settled(nil); w.state == workerReady {
		l.stop(w.proc, workerStopped)
	}
	l.watchers.Wait()
	l.reaper.wait()
	l.mu.Lock()
	joined, launch := l.joined, l.launch
	l.mu.Unlock()
	if joined {
		l.spares.leave(launch)
	}
}
