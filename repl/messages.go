package repl

// The messages package repl gives users, in one table (docs/contract.md §13.2).
// Clients and tests rely on their tokens: change the words around a token, never the
// token.
const (
	// Runs.
	// msgBusyRun: that another call started the active run, the run, for how
	// long, its first code line; that parallel agents each open their own session;
	// how to wait for the run and how to stop it. The caller may be an agent that
	// shares the session without knowing it (Claude Code's sub-agents share one MCP
	// connection, so the default session), and may never have seen the run's id.
	msgBusyRun = "A cell is already running in this session, started by another call: run %[1]s, for %[2]s, code: %[3]s. " +
		"If you did not start it, another agent shares this session: parallel agents each open their own with " +
		"python_session_open {\"name\": \"<your task>\"} and pass its session_id. " +
		"To wait for this run: python_run {\"run_id\": \"%[1]s\", \"wait\": %[4]d}; to stop it: python_cancel {\"run_id\": \"%[1]s\"}"
	msgBusy = "A cell is already running in this session; wait for it with python_run or stop it with python_cancel; " +
		"parallel agents each open their own session with python_session_open"
	msgBusyTask = ". It runs as an MCP task, whose result the client that started it delivers by itself when it ends" // after msgBusyRun, for a run that became an MCP task
	// The notebook's events (Session.RecordEvent): the busy refusal (the active run,
	// how long it had run, its code; the refused call's code) and python_cancel (the
	// run, after how long, its code).
	msgEventBusy        = "A call was refused: run %s had been running for %s (code: %s), so this code did not run: %s"
	msgEventCancel      = "python_cancel asked run %s to stop after %s (code: %s)"
	msgEventRestore     = "%d of %d variables of session %q (saved %s UTC) were restored into generation %d; not restored: %s"
	msgLimits           = "Code limit is 256 KiB; timeout must be 0.01..3600 seconds"
	msgTimedOut         = "Execution timed out after %s s"
	msgKeptVariables    = "; variables preserved"
	msgVariablesCleared = "variables cleared"
	// How to give a cell more time: a call that blocks, and a background run.
	msgLongerCell     = "; for a longer cell pass a larger timeout (up to 3600 s), or start it with python_start and poll python_run"
	msgLongerStart    = "; for a longer run pass python_start a larger timeout (up to 3600 s)"
	msgCancelled      = "Execution cancelled"
	msgByClose        = ": its session was closed (python_session_close, or the server stopping)" // after msgCancelled
	msgBeforeDispatch = "Execution cancelled before dispatch"
	msgDidNotStop     = "; worker did not stop; variables cleared"
	msgExited         = "; worker exited; variables cleared"
	// What an interrupt did to the session's processes (scope.go): after "variables
	// preserved" (a timeout) or "Execution cancelled", each a list of "name (pid N,
	// SIGINT)" items.
	msgInterruptEnded    = "; the interrupt ended the cell's processes %s"
	msgInterruptSurvived = "; the cell's processes still running after SIGINT: %s"
	msgOthersEnded       = "; processes of earlier cells ended meanwhile: %s"
	msgScopeMore         = " and %d more"
	msgCrashed           = "Python worker crashed; variables cleared"
	// msgRSS: the peak the worker reached, the budget, and how to change it.
	msgRSS             = "Python worker exceeded RSS budget (peak %s MiB, budget %s MiB); variables cleared; restart repl-mcp with --max-memory-mib N for a larger budget (0 disables it), or hold less data at once"
	msgAbandoned       = "Request abandoned; worker killed; external effects may already have occurred"
	msgStaleGeneration = "STATE_CHANGED: stale expected_generation; inspect the session before executing"
	msgWorkerRestarted = "STATE_CHANGED: worker restarted; expected_generation no longer matches"
	msgRunNotFound     = "Run not found; history retains last 64 runs"
	msgNoActiveRun     = "No matching active run"
	msgFrameTooLarge   = "Worker command exceeds 1 MiB; reduce code"

	// Images.
	msgImageNotRetained = "Image no longer retained: the session's history keeps the images of its newest results (2 MiB); run the cell again to see it"

	// Starting a worker.
	msgCannotRun      = "Python interpreter %q cannot be run: %w"
	msgCouldNotStart  = "Python worker could not start (%s): %w"
	msgHandshake      = "Invalid Python worker handshake"
	msgStartupTimeout = "Python worker startup timed out"
	msgStartupExit    = "Python worker exited during startup"
	msgNoPid          = "Worker handshake omitted real PID"
	msgWriteDeadline  = "Worker frame queue/write deadline exceeded"
	msgNoState        = "; no Python state exists"
	msgEndedAtStart   = " (it ended right after it started)"
	msgNoOpLimits     = "Python worker not started: the server gives it no limits for its ops (repl.Config.OpLimits)"

	// Cell code's rpcs.
	msgTooManyRPCs  = "Too many outstanding MCP calls"
	msgRPCNotActive = "MCP calls must belong to their originating active cell; use mcp.acall for concurrency"
	msgIPCLimit     = "MCP result exceeds IPC limit; call may have completed. Inspect mcp.journal(); do not blindly retry external writes."
	// msgNoTextStore is why a result's complete text could not be kept (KeepText).
	msgNoTextStore = "this result has no session's artifact store to keep it in"
	msgNoServices  = "Neither an MCP broker nor an artifact store serves this session; cell code cannot call other MCP servers or use artifacts"

	// Sessions.
	msgSessionClosed     = "Session is closed"
	msgSessionNotFound   = "Session not found or closed; open a new session"
	msgBadName           = "Session name must contain 1..128 bytes"
	msgOpeningFull       = "Session opening capacity exhausted; wait for active interpreter probes"
	msgPrepareTimeout    = "Session filesystem preparation timed out"
	msgNoProject         = "Project directory does not exist"
	msgProjectNotDir     = "Project must be a directory"
	msgVenvUninspectable = "Cannot inspect the project .venv environment"
	// msgBrokenVenv: what is wrong, the .venv, how else to choose an interpreter.
	msgBrokenVenv = "The project's .venv is broken: %s. A project's .venv is used whenever it exists, with no fallback to another interpreter: recreate it (python3 -m venv --clear %[2]s, or uv venv %[2]s, then reinstall the project's packages), remove it, or %[3]s"
	// How else to choose the interpreter of the default session, and of an opened one.
	msgVenvFixDefault = "start repl-mcp with --python PATH (or REPL_MCP_PYTHON)"
	msgVenvFixOpened  = "open the session with an explicit python"
	msgNotOnPath      = "Requested Python executable was not found on PATH"
	msgNoSuchPython   = "Requested Python executable does not exist"
	msgNotExecutable  = "Requested Python executable is not executable"
	msgSessionLimit   = "Session limit reached (32); close unused sessions"
	msgDefaultClose   = "The legacy default session cannot be closed; use execute_python reset=true to clear it"
	msgNoSuchSession  = "Session not found or already closed"
	msgOpenCancelled  = "Session opening cancelled before publication"

	// Restarts, snapshots and restores (docs/contract.md §6.7).
	// msgEarlierSession: the id, its name, when its server started, when this one did.
	msgEarlierSession    = msgSessionNotFound + ": %s (%q) belonged to an earlier repl-mcp server, started %s and gone since; the server restarted at %s, and the earlier sessions and their variables are gone unless restored"
	msgEarlierRestorable = "; %s of it, saved %s, can be restored with python_session_restore %s"
	msgDefaultNow        = ". The default session now is %s (generation %d): calls without session_id use it"
	// A run of an earlier server lifetime, after "Run not found..." or "No matching
	// active run": the run, its session's name, when it started, its code; when its
	// server started, when this one did; then what became of it, what can be
	// restored, and to run it again unless it finished.
	msgEarlierRun           = "; run %s (session %q, started %s, code: %s) belonged to an earlier repl-mcp server, started %s and gone since; the server restarted at %s"
	msgEarlierRunFinished   = "; it finished at %s, and its result went with that server"
	msgEarlierRunFailed     = "; it ended at %s (%s), and its result went with that server"
	msgEarlierRunClosed     = "; it was stopped at %s, when its session was closed"
	msgEarlierRunStopped    = "; it was stopped at %s, when that server stopped"
	msgEarlierRunKilled     = "; it was still running when that server ended without a word (killed, or its machine stopped), and did not outlive it"
	msgEarlierRunRestorable = "; %s of its session, saved %s, can be restored with python_session_restore %s"
	msgEarlierRunAgain      = "; run its code again to redo it"
	msgNoSnapshot           = "No snapshot to restore: none was saved for a session of this name in this project (snapshots are taken 2 s after a cell, unless the server runs with --no-snapshot)"
	// msgNoSnapshotHere: none was found, and this session takes none (why follows).
	msgNoSnapshotHere = "No snapshot to restore: none was saved for a session of this name in this project, and this session saves none: "
	msgSnapshotsOff   = "this server runs with --no-snapshot"
	msgNoStateDir     = "Snapshots are unavailable: the server has no usable state directory (its log says why)"
	msgRestoreFailed  = "Snapshot not restored"
	// msgSnapshotSandboxed: why a sandboxed worker takes no snapshot.
	msgSnapshotSandboxed = "the worker runs in the sandbox, and a snapshot it wrote could run code outside it when restored without one"

	// Interpreter probes.
	msgProbeTimeout  = "Interpreter probe timed out"
	msgProbeTooLarge = "Interpreter probe output exceeded limit"
	msgNotPython     = "Requested executable is not a supported Python interpreter"
	msgTooOld        = "Python 3.10 or newer is required"

	// The sandbox (sandbox.go). msgSandboxRefused: the mode, where it writes, its
	// network; msgCodexRefused: Codex's mode; msgSandboxChanged: from, to.
	msgSandboxRefused = "the sandbox (%s: writes %s; network %s) may have refused this; the person who started repl-mcp can widen it with --add-writable-root DIR (writes) or --allow-domain HOST (network)"
	msgCodexRefused   = "%s sandbox, which repl-mcp applies to cells, may have refused this; widen it in Codex (its sandbox mode, writable_roots or network_access)"
	msgSandboxChanged = "the sandbox changed from %s to %s: the worker restarted under it"
	msgSandboxWrite   = "the sandbox (%s) lets repl-mcp write only beneath %s; %s is outside: save inside them, or ask the person who started repl-mcp to widen the sandbox (--add-writable-root DIR)"
	msgAwaitingCodex  = "none yet: each call brings Codex's policy, and no worker starts without one"
	executionTrusted  = "trusted-local; full filesystem access; not a security sandbox"
)
