package repl

import (
	"time"
	"unicode/utf8"
)

// Recorder keeps what a person reads of a session beyond its 64-run history: every
// cell it finished, in order (package notebook), and what happened to the session
// beside its cells. A session tells it of each finished run, before the run's caller
// gets the result, of each event as it happens, and of its own close. The calls for
// one session may overlap (an event while a cell runs); the recorder keeps them in
// the order they were made.
type Recorder interface {
	CellFinished(c FinishedCell)
	SessionEvent(e SessionEvent)
	SessionClosed(sessionID string)
}

// EventKind names what happened to a session beside its cells.
type EventKind string

// The session events repl records itself. Others may record their own kinds through
// Session.RecordEvent (a restart of the server, say).
const (
	// EventBusy: a call was refused because another cell was running.
	EventBusy EventKind = "busy"
	// EventCancel: python_cancel asked the running cell to stop.
	EventCancel EventKind = "cancel"
	// EventRestore: python_session_restore loaded a snapshot into the session.
	EventRestore EventKind = "restore"
)

// SessionEvent is something that happened to a session that is no cell of its own:
// the notebook shows it where it happened, between the cells.
type SessionEvent struct {
	SessionID   string
	SessionName string
	Project     string
	At          time.Time
	Kind        EventKind
	// RunID is the run the event concerns, "" for none.
	RunID string
	// Text says what happened, for a person: a sentence or two, plain text.
	Text string
}

// RecordEvent tells the session's Recorder, if any, that kind happened now, about the
// run runID ("" for none), in text's words.
func (s *Session) RecordEvent(kind EventKind, runID, text string) {
	if s.cfg.Recorder == nil {
		return
	}
	s.cfg.Recorder.SessionEvent(SessionEvent{
		SessionID: s.id, SessionName: s.name, Project: s.env.project,
		At: time.Now(), Kind: kind, RunID: runID, Text: text,
	})
}

// StopKind says what stopped a run that did not end on its own; "" for one that did.
type StopKind string

const (
	StopTimeout StopKind = "timeout" // its timeout passed
	StopCancel  StopKind = "cancel"  // python_cancel, the client's cancel, or before dispatch
	StopLost    StopKind = "lost"    // the worker died, was killed, or passed its RSS budget
)

// stopOf is what stopped a run, by its reason (the reason table's stop).
func stopOf(res *Result) StopKind {
	if res.Success {
		return ""
	}
	return reasons[res.Reason].stop
}

// FinishedCell is one run as its session finished it.
type FinishedCell struct {
	SessionID   string
	SessionName string
	Started     time.Time
	// Code is the cell's source; for a saved file, SourcePath and Argv say what ran.
	Code       string
	SourcePath string
	Argv       []string
	Reset      bool // the run asked for a new worker first
	Fresh      bool // a saved file run in a worker of its own: the namespace was untouched
	Result     *Result
	// Stopped says what stopped the run, when it did not end on its own.
	Stopped StopKind
	// Project is the session's project directory, its cells' working directory.
	Project string
	// Python is the handshake of the session's latest worker: its interpreter and
	// version; nil when none ever started.
	Python *Ready
}

// Display is what display() printed of an object that is no image: its text, which
// the run's stdout holds too, and for the notebook pandas' HTML or a builtin's repr.
type Display struct {
	Text string `json:"text"`
	HTML string `json:"html,omitempty"`
	Repr string `json:"repr,omitempty"`
}

// boundDisplays keeps the worker's bounds: at most maxDisplays, maxDisplayBytes in
// all, valid UTF-8; the worker keeps them, but never trust that blindly.
func boundDisplays(displays []Display) []Display {
	var kept []Display
	total := 0
	for _, d := range displays {
		size := len(d.Text) + len(d.HTML) + len(d.Repr)
		if len(kept) == maxDisplays || total+size > maxDisplayBytes ||
			!utf8.ValidString(d.Text) || !utf8.ValidString(d.HTML) || !utf8.ValidString(d.Repr) {
			break
		}
		kept = append(kept, d)
		total += size
	}
	return kept
}

// record tells the session's Recorder of a finished run and then drops the run's
// HTML and displays, which only the record keeps: the history does not hold them for
// nothing.
func (s *Session) record(r *run, res *Result) {
	if s.cfg.Recorder == nil || r.req.quiet() {
		res.HTML, res.Displays = "", nil
		return
	}
	python := s.worker.view().lastReady
	s.cfg.Recorder.CellFinished(FinishedCell{
		SessionID: s.id, SessionName: s.name, Started: r.started,
		Code: r.req.Code, SourcePath: r.req.SourcePath, Argv: r.req.Argv,
		Reset: r.req.Reset, Fresh: r.req.Fresh, Result: res, Python: python,
		Stopped: stopOf(res), Project: s.env.project,
	})
	res.HTML, res.Displays = "", nil
}
