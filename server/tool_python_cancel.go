package server

import (
	"context"
	"fmt"

	"github.com/iota-uz/repl-mcp/repl"
)

type cancelParams struct {
	SessionID sessionArg `json:"session_id,omitempty"`
	RunID     runArg     `json:"run_id,omitempty"`
}

// cancelled is python_cancel's answer when a cancellation was requested.
type cancelled struct {
	CancelRequested bool   `json:"cancel_requested"`
	RunID           string `json:"run_id"`
	ExternalEffects string `json:"external_effects"`
	identity
}

// cancelRefused is python_cancel's answer when there was nothing to cancel: a
// failure that still says cancel_requested.
type cancelRefused struct {
	CancelRequested bool `json:"cancel_requested"`
	toolFailure
}

func (s *Server) pythonCancelTool() tool {
	return tool{
		name: "python_cancel",
		description: "Cancel the session's active run (or the one named): SIGINT, then SIGKILL after a 2 s grace. " +
			"Returns at once; poll python_run for the run's result. Does not roll back external writes.",
		output:      []variant{shape[cancelled](), shape[cancelRefused]()},
		annotations: annotations(false, true, false, true),
		routed:      true,
		handler: handle(func(_ context.Context, sess *repl.Session, p cancelParams) (any, error) {
			id, err := sess.Cancel(string(p.RunID))
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
