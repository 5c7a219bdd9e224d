package repl

// workerState is where a session's persistent worker is in its life. Its lifecycle
// (lifecycle.go) changes the state, the process and the generation together, under
// its lock, and the state only through setState, which refuses a move this table
// does not allow:
//
//	stopped, dead -> starting        a run needs a worker
//	starting      -> ready           a worker is ready (a spare claimed, or one
//	                                 started past its handshake): generation+1
//	starting      -> stopped, dead   the start failed (dead when an earlier
//	                                 generation's variables were lost)
//	ready         -> busy            a run takes the worker
//	busy          -> ready           the run ended with its variables preserved
//	ready, busy   -> stopping        a reset, the session closing, a crash, a kill
//	                                 past the interrupt grace, the memory budget
//	stopping      -> stopped         stopped on purpose (reset, close); a reset's
//	                                 worker is halted by then, reaped in the background
//	stopping      -> dead            its variables are lost
//
// A run holds the session's slot for its whole life, so only that run's goroutine
// starts a worker or moves it between ready and busy; the only other mover is the
// watcher that notices an idle worker's death. Stopping the session's worker, for any
// reason, is lifecycle.retire (stop, reset) and nothing else.
type workerState int

const (
	// workerStopped: no worker, and nothing lost: not started yet, or stopped on
	// purpose (a reset, the session closing).
	workerStopped workerState = iota
	// workerStarting: a worker is being spawned; no cell can reach it yet.
	workerStarting
	// workerReady: the worker is alive and idle.
	workerReady
	// workerBusy: the worker runs the active run's cell.
	workerBusy
	// workerStopping: the worker is being stopped and reaped.
	workerStopping
	// workerDead: the worker is gone and its variables with it (it crashed, was
	// killed past its interrupt grace, exceeded its memory budget, or ended its
	// state itself). The next run starts generation+1; a guarded run learns first.
	workerDead
)

func (s workerState) String() string {
	switch s {
	case workerStopped:
		return "stopped"
	case workerStarting:
		return "starting"
	case workerReady:
		return "ready"
	case workerBusy:
		return "busy"
	case workerStopping:
		return "stopping"
	case workerDead:
		return "dead"
	}
	return "unknown"
}

// allows reports whether a worker in state s may move to next.
func (s workerState) allows(next workerState) bool {
	switch s {
	case workerStopped, workerDead:
		return next == workerStarting
	case workerStarting:
		return next == workerReady || next == workerStopped || next == workerDead
	case workerReady:
		return next == workerBusy || next == workerStopping
	case workerBusy:
		return next == workerReady || next == workerStopping
	case workerStopping:
		return next == workerStopped || next == workerDead
	}
	return false
}
