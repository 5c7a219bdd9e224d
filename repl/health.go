package repl

import "fmt"

// Health is a session's self-description; python_health reports the default one.
type Health struct {
	ServerID         string       `json:"server_id"`
	SessionID        string       `json:"session_id"`
	Name             string       `json:"name"`
	Project          string       `json:"project"`
	Closed           bool         `json:"closed"`
	Generation       uint64       `json:"generation"`
	Version          string       `json:"version"`
	Runtime          string       `json:"runtime"`
	ExecutionMode    string       `json:"execution_mode"`
	PythonExecutable string       `json:"python_executable"`
	Python           *PythonState `json:"python"`
	ActiveRun        *string      `json:"active_run"`
	Environment      Environment  `json:"environment"`
	Limits           Limits       `json:"limits"`
	MemoryLimit      string       `json:"memory_limit"`
	// Spare is the pre-started worker waiting for this session's launch (shared by
	// every session of the same interpreter, project and environment).
	Spare SpareState `json:"spare"`
	// Snapshot is the session's snapshot, and the one a restore would load.
	Snapshot SnapshotState `json:"snapshot"`
	// Sandbox is the session's sandbox (docs/contract.md §11.4).
	Sandbox SandboxHealth `json:"sandbox"`
}

// PythonState is the last worker's handshake and whether that worker still runs.
type PythonState struct {
	Ready
	Running bool `json:"running"`
}

// Environment says which interpreter a session uses and why.
type Environment struct {
	Source string `json:"source"`
	Python string `json:"python"`
	// ChosenBy says how the server picked its default interpreter.
	ChosenBy               string     `json:"chosen_by,omitempty"`
	Version                string     `json:"version,omitempty"`
	ActualPythonExecutable string     `json:"actual_python_executable,omitempty"`
	VersionInfo            *ProbeInfo `json:"version_info,omitempty"`
	Validated              bool       `json:"validated"`
	RuntimeStatus          string     `json:"runtime_status"`
}

// Limits are the contract's limits as this server applies them.
type Limits struct {
	CodeBytes      int `json:"code_bytes"`
	FrameBytes     int `json:"frame_bytes"`
	TimeoutSeconds int `json:"timeout_seconds"`
	HistoryRuns    int `json:"history_runs"`
	StreamBytes    int `json:"stream_bytes"`
	WorkerRSSMiB   int `json:"worker_rss_mib"`
}

// Health describes the session without starting anything.
func (s *Session) Health() Health {
	spare := s.worker.spare()
	snapshot := s.snapshotState()
	w := s.worker.view()
	var live *process
	if w.state == workerReady || w.state == workerBusy {
		live = w.proc
	}
	sb := s.sandboxHealth(live)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := Health{
		ServerID:         s.serverID,
		SessionID:        s.id,
		Name:             s.name,
		Project:          s.env.project,
		Closed:           s.closed,
		Generation:       w.generation,
		Version:          s.cfg.Version,
		Runtime:          "go-supervisor/cpython-worker",
		ExecutionMode:    executionModeText(s.cfg.Sandbox.Mode),
		PythonExecutable: s.env.python,
		Environment: Environment{
			Source:        s.env.source,
			Python:        s.env.python,
			ChosenBy:      s.env.chosenBy,
			RuntimeStatus: "lazy",
		},
		Limits: Limits{
			CodeBytes:      MaxCodeBytes,
			FrameBytes:     MaxFrameBytes,
			TimeoutSeconds: int(MaxTimeout.Seconds()),
			HistoryRuns:    HistoryRuns,
			StreamBytes:    StreamLimit,
			WorkerRSSMiB:   s.cfg.MaxMemoryMiB,
		},
		MemoryLimit: memoryLimitText(s.cfg.MaxMemoryMiB),
		Spare:       spare,
		Snapshot:    snapshot,
	}
	if p := s.env.probe; p != nil {
		h.Environment.Version, h.Environment.ActualPythonExecutable, h.Environment.VersionInfo = p.Version, p.Executable, p
		h.Environment.Validated = true
	}
	if w.lastReady != nil {
		running := (w.state == workerReady || w.state == workerBusy) && w.proc.alive()
		h.Python = &PythonState{Ready: *w.lastReady, Running: running}
		h.Environment.Validated = true
		h.Environment.Version = w.lastReady.PythonVersion
		h.Environment.ActualPythonExecutable = w.lastReady.PythonExecutable
		h.Environment.RuntimeStatus = "stopped"
		if running {
			h.Environment.RuntimeStatus = "running"
		}
	}
	if s.closed {
		h.Environment.RuntimeStatus = "closed"
	}
	h.Sandbox = sb
	if s.active != nil {
		h.ActiveRun = strPtr(s.active.id)
	}
	return h
}

// snapshotState is the session's snapshot as health shows it: off without a state
// directory or with --no-snapshot, when a restore may still load an offer.
func (s *Session) snapshotState() SnapshotState {
	if s.snaps != nil {
		return s.snaps.state()
	}
	return SnapshotState{Status: "off", Restorable: s.offer()}
}

// chosenExplicitly is the rule of an opened session's python argument.
const chosenExplicitly = "python_session_open's python argument"

// choiceWords says which interpreter a session uses and why, in the words health's
// chosen_by and doctor show a user: the rule first (its stable name), then the path.
func choiceWords(rule, python string) string {
	switch rule {
	case ChosenByFlag:
		return "--python " + python
	case ChosenByEnv:
		return "REPL_MCP_PYTHON=" + python
	case ChosenByVenv:
		return "the project's .venv at " + python
	case ChosenBeside:
		return "the python " + ChosenBeside + ", " + python + " (the venv repl-mcp is installed in)"
	case ChosenFromPath:
		return ChosenFromPath + " (no --python, REPL_MCP_PYTHON, project .venv or python beside the repl-mcp executable)"
	case chosenExplicitly:
		return chosenExplicitly + ", " + python
	case "":
		return python
	}
	return rule + ", " + python
}

func memoryLimitText(mib int) string {
	if mib == 0 {
		return "Worker RSS budget disabled (--max-memory-mib 0)"
	}
	return fmt.Sprintf("Worker RSS is sampled every 250 ms during execution and the worker is stopped above %d MiB; descendants are excluded; a resource budget, not isolation; zero disables", mib)
}
