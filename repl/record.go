package repl

import (
	"time"
	"unicode/utf8"
)

// Recorder keeps what a person reads of a session beyond its 64-run history: every
// cell it finished, in order (package notebook). A session tells it of each
// finished run, before the run's caller gets the result, and of its own close.
// The calls for one session never overlap; those of different sessions may.
type Recorder interface {
	CellFinished(c FinishedCell)
	SessionClosed(sessionID string)
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
	})
	res.HTML, res.Displays = "", nil
}
