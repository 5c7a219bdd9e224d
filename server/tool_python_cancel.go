package server

import (
	"context"
	"fmt"

	"github.com/iota-uz/repl-mcp/repl"
)

const cancelSchema = `{
  "type": "object",
  "required": ["cancel_requested"],
  "properties": {
    "cancel_requested": {"type": "boolean"},
    "run_id": {"type": "string"},
    "error": {"type": "string"},
    "external_effects": {"type": "string"},
    "server_id": {"type": "string"},
    "session_id": {"type": "string"},
    "generation": {"type": "integer", "minimum": 0}
  }
}`

// cancelled is python_cancel's answer when a cancellation was requested.
type cancelled struct {
	CancelRequested bool   `json:"cancel_requested"`
	RunID           string `json:"run_id"`
	ExternalEffects string `json:"external_effects"`
	identity
}

func (s *Server) pythonCancelTool() tool {
	return tool{
		name: "python_cancel",
		description: "Cancel the session's active run (or the one named): SIGINT, then SIGKILL after a 2 s grace. " +
			"Returns at once; poll python_run for the run's result. Does not roll back external writes.",
		input:       inputSchema{sessionIDParam(), runIDParam()},
		output:      cancelSchema,
		annotations: annotations(false, true, false, true),
		routed:      true,
		handler: handle(func(_ context.Context, sess *repl.Session, p runParams) (any, error) {
			id, err := sess.Cancel(p.RunID)
			if err != nil {
				// The output schema requires cancel_requested, failed or not.
				return nil, failWith(err, "cancel_requested", false)
			}
			return cancelled{
				CancelRequested: true,
				RunID:           id,
				ExternalEffects: "May already have occurred; never retried automatically",
				identity:        identify(sess),
			}, nil
		}),
	}
}

// modelText says the cancel was asked for, and what it cannot undo.
func (c cancelled) modelText() reply {
	return reply{body: fmt.Sprintf("Cancel requested for run %s; poll python_run for its result. External effects may "+
		"already have occurred; nothing is retried.", c.RunID)}
}
