package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

const runSchema = `{
  "type": "object",
  "oneOf": [
    {"required": ["run_id", "status"], "properties": {"status": {"type": "string", "enum": ["starting", "running"]}}},
    {"required": ["run_id", "success"]},
    {"required": ["error"], "not": {"required": ["success"]}}
  ]
}`

// runParams are the arguments of python_run and python_cancel.
type runParams struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
}

func (s *Server) pythonRunTool() tool {
	return tool{
		name: "python_run",
		description: "Inspect the active run (live stdout/stderr so far) or a retained result (the last 64 runs of " +
			"the session, each with the generation it ran under); omit run_id for the active or latest run. " +
			"Reading never re-executes anything.",
		input:       inputSchema{sessionIDParam(), runIDParam()},
		output:      runSchema,
		annotations: annotations(true, false, true, false),
		routed:      true,
		handler: handle(func(_ context.Context, sess *repl.Session, p runParams) (any, error) {
			snap, res, err := sess.Lookup(p.RunID)
			switch {
			case err != nil:
				return nil, err
			case snap != nil:
				return snap, nil
			}
			return polledResult(res), nil
		}),
	}
}
