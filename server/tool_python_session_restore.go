package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
)

type restoreParams struct {
	SessionID   sessionArg `json:"session_id,omitempty"`
	FromSession string     `json:"from_session,omitempty" schema:"maxLength=128" jsonschema:"An earlier session's id (or a snapshot id) whose snapshot to load; omit for the latest snapshot of this session's name in its project."`
	Timeout     timeoutArg `json:"timeout,omitempty"`
}

func (s *Server) pythonSessionRestoreTool() tool {
	return tool{
		name: "python_session_restore",
		description: "Restore a session's variables from its latest snapshot, saved between cells, after a crash, " +
			"a memory kill or a server restart: loads them into the session's worker (starting one if none runs) and " +
			"lists what came back, what did not and why, with the run whose code bound each. from_session loads the " +
			"snapshot of an earlier session id instead (named by an answer after a restart). Nothing is restored " +
			"unless this is called; reset=true never restores.",
		output:      []variant{shape[repl.RestoreResult](), shape[toolFailure]()},
		annotations: annotations(false, true, false, true),
		routed:      true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p restoreParams) (any, error) {
			timeout := seconds(float64(p.Timeout))
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
		r.RestoredCount, r.RestoredCount+r.NotRestoredCount, r.FromSessionName, repl.Clock(r.SavedAt), r.SavedGeneration, r.SessionID, r.Generation)
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
