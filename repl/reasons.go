package repl

// Reason says why a run ended badly (docs/contract.md §4.2): a code that the
// supervisor sets where it makes the failure, and that the server, the notebook and
// the tests switch on. The words of the result's error are for people and may say
// more; no code reads them. It is "" for a run that succeeded. It is not on the wire:
// the contract's result carries the error's words and state, and the reason's text
// is what its error opens with.
type Reason string

// The reasons, in the order of the table below.
const (
	// ReasonRaised: the cell raised, or a saved file exited with a non-zero status,
	// or the worker could not read the saved file: the worker's own report.
	ReasonRaised Reason = "raised"
	// ReasonPolicy: the cell's asyncio tasks refused cancellation, and the worker
	// stopped itself (docs/contract.md §5.4.5).
	ReasonPolicy Reason = "policy"
	// ReasonTimeout: the run's timeout passed, and it was interrupted.
	ReasonTimeout Reason = "timeout"
	// ReasonCancelled: python_cancel, the client's cancel, or the session's close
	// interrupted the run.
	ReasonCancelled Reason = "cancelled"
	// ReasonNotDispatched: the run was cancelled before its cell reached a worker.
	ReasonNotDispatched Reason = "cancelled_before_dispatch"
	// ReasonCrashed: the worker died under the run, or right after it started.
	ReasonCrashed Reason = "crashed"
	// ReasonMemory: the worker passed the RSS budget (--max-memory-mib) and was killed.
	ReasonMemory Reason = "memory"
	// ReasonAbandoned: the session closed or the server shut down while the run went
	// on past its grace; the worker was killed.
	ReasonAbandoned Reason = "abandoned"
	// ReasonBusy: another run holds the session.
	ReasonBusy Reason = "busy"
	// ReasonLimits: the code or the timeout is outside the contract's limits.
	ReasonLimits Reason = "limits"
	// ReasonStale: expected_generation names a generation that is no longer the
	// session's.
	ReasonStale Reason = "stale_generation"
	// ReasonRestarted: expected_generation named the generation of a worker that was
	// lost; a new one started for the retry.
	ReasonRestarted Reason = "worker_restarted"
	// ReasonClosed: the session was closed.
	ReasonClosed Reason = "session_closed"
	// ReasonStartFailed: no worker could be started.
	ReasonStartFailed Reason = "start_failed"
	// ReasonNoPolicy: under --sandbox inherit-codex, the call carried no policy of
	// Codex's to run under.
	ReasonNoPolicy Reason = "sandbox_policy_missing"
	// ReasonTooLarge: the execute command would pass the worker's frame limit.
	ReasonTooLarge Reason = "command_too_large"
)

// Effect is what a reason means for the session's variables.
type Effect string

const (
	// Untouched: nothing ran; the variables are as they were.
	Untouched Effect = "untouched"
	// Kept: the cell ran and stopped; what it assigned before that stays.
	Kept Effect = "kept"
	// KeptUnlessStuck: kept when the worker honoured the interrupt within the grace;
	// cleared when it did not, when it exited, or when threads of the cell still ran
	// (the error then says "variables cleared").
	KeptUnlessStuck Effect = "kept unless the interrupt failed"
	// Cleared: the worker is gone; the next run starts a new one, from nothing.
	Cleared Effect = "cleared"
	// Replaced: the variables were lost before this call, with the worker; the new
	// worker is empty, and nothing ran.
	Replaced Effect = "replaced"
)

// reasonEntry is one row of the reason table.
type reasonEntry struct {
	// meaning is what happened, for people reading the table.
	meaning string
	// effect is what the reason means for the variables of a persistent run; a fresh
	// run's (python_execute_file's fresh) are untouched whatever its reason.
	effect Effect
	// text is the message table's words the result's error holds (docs/contract.md
	// §13.2), the fixed part of a format; "" where the words are the worker's own
	// report, which varies (ReasonRaised).
	text string
	// saysCleared: when the reason clears the variables, its error says so in words,
	// and the text form does not repeat it.
	saysCleared bool
	// stop is what the session's notebook says stopped the run.
	stop StopKind
}

// reasons is the reason table: every code, what it means for the variables, the
// words its error holds, and what the notebook records. docs/contract.md §4.2 is its
// reading for users. The wire carries the error's words and the state, not the code.
var reasons = map[Reason]reasonEntry{
	ReasonRaised: {meaning: "the cell raised, a saved file exited with a non-zero status, or the worker could not read the file",
		effect: Kept},
	ReasonPolicy: {meaning: "the cell's asyncio tasks refused cancellation and the worker stopped itself",
		effect: Cleared, text: "Background tasks refused cancellation", saysCleared: true},
	ReasonTimeout: {meaning: "the run's timeout passed and it was interrupted",
		effect: KeptUnlessStuck, text: "Execution timed out after", saysCleared: true, stop: StopTimeout},
	ReasonCancelled: {meaning: "python_cancel, the client's cancel or the session's close interrupted the run",
		effect: KeptUnlessStuck, text: msgCancelled, saysCleared: true, stop: StopCancel},
	ReasonNotDispatched: {meaning: "the run was cancelled before its cell reached a worker",
		effect: Untouched, text: msgBeforeDispatch, stop: StopCancel},
	ReasonCrashed: {meaning: "the worker died under the run, or right after it started",
		effect: Cleared, text: msgCrashed, saysCleared: true, stop: StopLost},
	ReasonMemory: {meaning: "the worker passed the RSS budget (--max-memory-mib) and was killed",
		effect: Cleared, text: "Python worker exceeded RSS budget", saysCleared: true, stop: StopLost},
	ReasonAbandoned: {meaning: "the session closed or the server shut down while the run went on past its grace; the worker was killed",
		effect: Cleared, text: msgAbandoned, stop: StopLost},
	ReasonBusy: {meaning: "another run holds the session",
		effect: Untouched, text: "A cell is already running in this session"},
	ReasonLimits: {meaning: "the code or the timeout is outside the contract's limits",
		effect: Untouched, text: msgLimits},
	ReasonStale: {meaning: "expected_generation is no longer the session's generation",
		effect: Untouched, text: msgStaleGeneration},
	ReasonRestarted: {meaning: "expected_generation named a worker that was lost; a new one started for the retry",
		effect: Replaced, text: msgWorkerRestarted},
	ReasonClosed: {meaning: "the session was closed",
		effect: Untouched, text: msgSessionClosed},
	ReasonStartFailed: {meaning: "no worker could be started",
		effect: Cleared, text: msgNoState},
	ReasonNoPolicy: {meaning: "under --sandbox inherit-codex the call carried no policy of Codex's",
		effect: Untouched, text: msgNoState},
	ReasonTooLarge: {meaning: "the execute command would pass the worker's 1 MiB frame",
		effect: Untouched, text: msgFrameTooLarge},
}

// Reasons are every reason code, for the tests that walk the table.
func Reasons() []Reason {
	return []Reason{ReasonRaised, ReasonPolicy, ReasonTimeout, ReasonCancelled, ReasonNotDispatched, ReasonCrashed,
		ReasonMemory, ReasonAbandoned, ReasonBusy, ReasonLimits, ReasonStale, ReasonRestarted, ReasonClosed,
		ReasonStartFailed, ReasonNoPolicy, ReasonTooLarge}
}

// Effect is what r means for a persistent run's variables.
func (r Reason) Effect() Effect { return reasons[r].effect }

// Text is what the error of a result with reason r opens with.
func (r Reason) Text() string { return reasons[r].text }

// SaysCleared reports whether the error of a result with reason r says in words that
// the variables were cleared, whenever they were.
func (r Reason) SaysCleared() bool { return reasons[r].saysCleared }

// state is the namespace after a run that failed for r, where r alone decides it;
// the interrupts' (KeptUnlessStuck) are decided where the interrupt ends.
func (r Reason) state() State {
	if reasons[r].effect == Cleared {
		return StateCleared
	}
	return StatePreserved
}
