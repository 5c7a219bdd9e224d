package server

import "context"

const closeSchema = `{
  "type": "object",
  "oneOf": [
    {"required": ["closed", "server_id", "session_id", "generation"], "properties": {"closed": {"type": "boolean"}}},
    {"required": ["error"], "properties": {"error": {"type": "string"}}}
  ]
}`

func (s *Server) pythonSessionCloseTool() tool {
	return tool{
		name: "python_session_close",
		description: "Close a session: cancel and reap its active run and worker; other sessions keep running. " +
			"The default session cannot be closed (use execute_python with reset=true to clear it).",
		input:       inputSchema{withRequired(sessionIDParam())},
		output:      closeSchema,
		annotations: annotations(false, true, false, true),
		handle: func(_ context.Context, call *toolCall) any {
			var args runArgs
			decodeArgs(call.args, &args)
			h, err := s.repl.CloseSession(args.SessionID)
			if err != nil {
				return map[string]any{"error": err.Error()}
			}
			return map[string]any{"closed": true, "server_id": h.ServerID, "session_id": h.SessionID, "generation": h.Generation}
		},
	}
}

func withRequired(p param) param {
	p.required = true
	return p
}
