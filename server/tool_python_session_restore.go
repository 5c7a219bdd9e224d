package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
)

// restoreReportProperties are repl.RestoreReport's fields (also an execution result's
// restored).
const restoreReportProperties = `
    "snapshot": {"type": "string"}, "from_session_id": {"type": "string"}, "from_session_name": {"type": "string"},
    "saved_at": {"type": "string"}, "saved_generation": {"type": "integer"},
    "python": {"type": "string"}, "pickler": {"type": "string"},
    "restored_count": {"type": "integer"}, "not_restored_count": {"type": "integer"},
    "restored": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
      "type": {"type": "string"}, "bytes": {"type": "integer"}, "note": {"type": "string"}}}},
    "not_restored": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
      "type": {"type": "string"}, "reason": {"type": "string"}, "run_id": {"type": "string"},
      "generation": {"type": "integer"}, "code_line": {"type": "string"}}}},
    "interrupted": {"type": "boolean"}`

// restorableSchema is a snapshot a restore can load (repl.Restorable).
const restorableSchema = `{"type": "object", "description": "a snapshot python_session_restore can load",
  "properties": {"snapshot": {"type": "string"}, "session_id": {"type": "string"}, "session_name": {"type": "string"},
    "generation": {"type": "integer"}, "saved_at": {"type": "string"}, "variables": {"type": "integer"},
    "bytes": {"type": "integer"}, "skipped": {"type": "integer"}, "stale": {"type": "integer"}, "took_ms": {"type": "number"}}}`

// restoreReportSchema is a restore's report (repl.RestoreReport).
const restoreReportSchema = `{"type": "object", "properties": {` + restoreReportProperties + `}}`

const restoreSchema = `{
  "type": "object",
  "oneOf": [
    {"required": ["snapshot", "restored_count", "not_restored_count", "restored", "not_restored", "server_id", "session_id", "generation"],
     "properties": {` + restoreReportProperties + `,
       "server_id": {"type": "string"}, "session_id": {"type": "string"}, "generation": {"type": "integer", "minimum": 0},
       "state_reset": {"type": "boolean"}, "elapsed_ms": {"type": "number"}, "adopted": {"type": "boolean"}}},
    {"required": ["error"], "properties": {"error": {"type": "string"},
      "server_id": {"type": "string"}, "session_id": {"type": "string"}, "generation": {"type": "integer", "minimum": 0}}}
  ]
}`

type restoreParams struct {
	SessionID   string  `json:"session_id"`
	FromSession string  `json:"from_session"`
	Timeout     float64 `json:"timeout"`
}

func (s *Server) pythonSessionRestoreTool() tool {
	return tool{
		name: "python_session_restore",
		description: "Restore a session's variables from its latest snapshot, saved between cells, after a crash, " +
			"a memory kill or a server restart: loads them into the session's worker (starting one if none runs) and " +
			"lists what came back, what did not and why, with the run whose code bound each. from_session loads the " +
			"snapshot of an earlier session id instead (named by an answer after a restart). Nothing is restored " +
			"unless this is called; reset=true never restores.",
		input: inputSchema{
			sessionIDParam(),
			{name: "from_session", typ: "string", maxLength: 128, desc: "An earlier session's id (or a snapshot id) whose snapshot to load; omit for the latest snapshot of this session's name in its project."},
			timeoutParam(),
		},
		output:      restoreSchema,
		annotations: annotations(false, true, false, true),
		routed:      true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p restoreParams) (any, error) {
			timeout := seconds(p.Timeout)
			if timeout == 0 {
				timeout = repl.DefaultTimeout
			}
			res, err := sess.Restore(ctx, p.FromSession, timeout)
			if err != nil {
				return nil, err
			}
			return restored{res}, nil
		}),
	}
}

// restored is python_session_restore's answer.
type restored struct{ *repl.RestoreResult }

// modelText says what came back and what did not, and how to rebuild the rest.
func (r restored) modelText() reply {
	var b strings.Builder
	fmt.Fprintf(&b, "Restored %d of %d variables of session %q (snapshot saved %s, generation %d) into session %s, now generation %d",
		r.RestoredCount, r.RestoredCount+r.NotRestoredCount, r.FromSessionName, clock(r.SavedAt), r.SavedGeneration, r.SessionID, r.Generation)
	if r.StateReset {
		b.WriteString(" (a new worker)")
	}
	b.WriteString(".\n")
	b.WriteString(restoreLines(&r.RestoreReport))
	return reply{body: b.String()}
}

// restoreLines lists what a restore brought back and what it did not.
func restoreLines(r *repl.RestoreReport) string {
	var b strings.Builder
	if len(r.Restored) > 0 {
		names := make([]string, 0, len(r.Restored))
		for _, v := range r.Restored {
			name := v.Name + " (" + cutFooter(v.Type, footerNameMax) + ")"
			if v.Note != "" {
				name += " [" + v.Note + "]"
			}
			names = append(names, name)
		}
		fmt.Fprintf(&b, "Came back: %s", strings.Join(names, ", "))
		if more := r.RestoredCount - len(r.Restored); more > 0 {
			fmt.Fprintf(&b, ", and %d more", more)
		}
		b.WriteString(".\n")
	}
	if len(r.NotRestored) > 0 {
		b.WriteString("Did not come back:\n")
		for _, v := range r.NotRestored {
			fmt.Fprintf(&b, "- %s (%s): %s", v.Name, cutFooter(v.Type, footerNameMax), v.Reason)
			if v.RunID != "" {
				fmt.Fprintf(&b, "; bound by run %s (generation %d)", v.RunID, v.Generation)
				if v.CodeLine != "" {
					fmt.Fprintf(&b, ": %s", v.CodeLine)
				}
			}
			b.WriteString("\n")
		}
		if more := r.NotRestoredCount - len(r.NotRestored); more > 0 {
			fmt.Fprintf(&b, "- and %d more\n", more)
		}
		b.WriteString("Run the code that bound them again to rebuild them.\n")
	}
	if r.Interrupted {
		b.WriteString("The restore was interrupted; the variables it did not reach are listed as not back.\n")
	}
	return b.String()
}
