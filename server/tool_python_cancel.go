package server

import "context"

const cancelSchema = `{
  "type": "object",
  "required": ["cancel_requested"],
  "properties": {
    "cancel_requested": {"type": "boolean"},
    "run_id": {"type": "string"},
    "error": {"type": "string"},
    "external_effects": {"type": "string"}
  }
}`

func (s *Server) pythonCancelTool() tool {
	return tool{
		name: "python_cancel",
		description: "Cancel the session's active run (or the one named): SIGINT, then SIGKILL after a 2 s grace. " +
			"Returns at once; poll python_run until success appears. Does not roll back external writes.",
		input:       inputSchema{sessionIDParam(), runIDParam()},
		output:      cancelSchema,
		annotations: annotations(false, true, false, true),
		routed:      true,
		handle: func(_ context.Context, call *toolCall) any {
			var args runArgs
			decodeArgs(call.args, &args)
			id, err := call.session.Cancel(args.RunID)
			if err != nil {
				return identified(call.session, map[string]any{"cancel_requested": false, "error": err.Error()})
			}
			return identified(call.session, map[string]any{
				"cancel_requested": true,
				"run_id":           id,
				"external_effects": "May already have occurred; never retried automatically",
			})
		},
	}
}
