package server

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/internal/utf8cut"
	"github.com/iota-uz/repl-mcp/repl"
)

// The pieces of the tools' texts that several tools share (docs/contract.md §3.4):
// a session on one line (python_health, python_session_list, python_session_open,
// python_session_inspect), a path cut in its middle, an artifact reference. Each
// tool's own text is in its file, as the modelText method of its value.

// Bounds of the tools' texts.
const (
	// healthTextLimit keeps python_health small: it may be a client's first call.
	healthTextLimit = 1500
	// pathShown bounds a path (up to 4,096 characters) in a line of text.
	pathShown = 160
	// messageShown bounds a configuration error in health.
	messageShown = 300
	// namesShown bounds the variables an inspection lists.
	namesShown = 200
)

// workerState says whether a session has a worker, and what it does.
func workerState(h repl.Health) string {
	var state string
	switch h.Environment.RuntimeStatus {
	case "lazy":
		state = "no worker yet (it starts on the first execution)"
	case "running":
		state = "worker running"
	case "stopped":
		state = "worker stopped (the next execution starts a new one)"
	default:
		state = h.Environment.RuntimeStatus
	}
	if h.ActiveRun != nil {
		state += ", run " + *h.ActiveRun + " active"
	}
	return state
}

// pythonText is a session's interpreter: what runs, else what was chosen and why.
func pythonText(h repl.Health) string {
	e := h.Environment
	text := cutPath(e.Python)
	if e.ActualPythonExecutable != "" && e.ActualPythonExecutable != e.Python {
		text += " (" + cutPath(e.ActualPythonExecutable) + ")"
	}
	switch {
	case e.Version != "":
		text += " " + e.Version
	case !e.Validated:
		text += " (not checked yet)"
	}
	if e.ChosenBy != "" {
		text += ", chosen by " + e.ChosenBy
	} else if e.Source != "" {
		text += ", " + strings.ReplaceAll(e.Source, "_", " ")
	}
	return text
}

// shellText says what the shell of a cell finds first (docs/contract.md §1.4), once a
// worker has said it: "" before, or when it put nothing on PATH.
func shellText(h repl.Health) string {
	if h.Python == nil || h.Python.PathHead == "" {
		return ""
	}
	text := " Shell: PATH starts with " + cutPath(h.Python.PathHead)
	if h.Python.VirtualEnv != "" {
		text += ", VIRTUAL_ENV " + cutPath(h.Python.VirtualEnv)
	}
	return text + "."
}

// sessionLine is one session on one line.
func sessionLine(h repl.Health) string {
	line := fmt.Sprintf("%s, session_id %s: generation %d, %s; python %s; project %s",
		cutFooter(h.Name, footerNameMax), h.SessionID, h.Generation, workerState(h), pythonText(h), cutPath(h.Project))
	if sn := h.Snapshot.SnapshotSummary; sn != nil {
		line += fmt.Sprintf("; snapshot saved %s (%d variable%s)", repl.Clock(sn.SavedAt), sn.Variables, plural(sn.Variables))
	}
	return line
}

// savedText says what the session's snapshot holds, and what a restore would
// bring back (docs/contract.md §6.7).
func savedText(st repl.SnapshotState) string {
	var text string
	switch sn := st.SnapshotSummary; {
	case st.Status == "off" && st.Reason != "":
		text = "Snapshots: off: " + st.Reason + "."
	case st.Status == "off":
		text = "Snapshots: off."
	case st.Status == "failed":
		text = "Snapshot failed (cells are unaffected): " + cutFooter(st.Error, footerErrorMax) + "."
	case sn != nil:
		text = fmt.Sprintf("Snapshot saved %s: %d variable%s, %s bytes", repl.Clock(sn.SavedAt), sn.Variables, plural(sn.Variables), count(sn.Bytes))
		if sn.Skipped > 0 {
			text += fmt.Sprintf(", %d not saved", sn.Skipped)
		}
		if sn.Stale > 0 {
			text += fmt.Sprintf(", %d possibly older than the variable", sn.Stale)
		}
		text += "."
		if st.Status == "released" {
			text += " Its worker was released while idle (--idle-release): the next execution restores them first."
		}
	case st.Status == "saving":
		text = "Snapshot: being saved."
	default:
		text = "Snapshot: none yet (one is saved 2 s after a cell)."
	}
	if r := st.Restorable; r != nil {
		text += fmt.Sprintf(" A restore brings back %d variable%s saved %s: python_session_restore.", r.Variables, plural(r.Variables), repl.Clock(r.SavedAt))
	}
	return text
}

// cutPath keeps both ends of a long path: the root says where, the end what.
func cutPath(p string) string {
	if len(p) <= pathShown {
		return p
	}
	head := utf8cut.Prefix(p, pathShown/2-2)
	tail := p[len(p)-(pathShown/2-2):]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return head + "..." + tail
}

// refText is an artifact reference as the texts name one.
func refText(r artifacts.Ref) string {
	return fmt.Sprintf("artifact %s (%s bytes)", r.ID, count(r.Size))
}
