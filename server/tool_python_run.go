package server

import "context"

const runSchema = `{
  "type": "object",
  "oneOf": [
    {"required": ["run_id", "status"], "properties": {"status": {"type": "string", "enum": ["starting", "running"]}}},
    {"required": ["run_id", "success"]},
    {"required": ["error"], "not": {"required": ["success"]}}
  ]
}`

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
		handle: func(_ context.Context, call *toolCall) any {
			var args runArgs
			decodeArgs(call.args, &args)
			snap, res, err := call.session.Lookup(args.RunID)
			switch {
			case err != nil:
				return identified(call.session, map[string]any{"error": err.Error()})
			case snap != nil:
				return snap
			}
			return res
		},
	}
}
