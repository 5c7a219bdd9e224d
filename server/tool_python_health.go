package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

const healthSchema = `{
  "type": "object",
  "required": ["server", "sessions"],
  "properties": {
    "server": {"type": "object", "required": ["server_id", "session_id", "generation", "python", "limits"]},
    "sessions": {"type": "object", "required": ["server_id", "sessions", "limit"]}
  }
}`

// healthReport is python_health's answer.
type healthReport struct {
	Server   repl.Health `json:"server"`
	Sessions sessionList `json:"sessions"`
}

type sessionList struct {
	ServerID string        `json:"server_id"`
	Sessions []repl.Health `json:"sessions"`
	Limit    int           `json:"limit"`
}

func (s *Server) pythonHealthTool() tool {
	return tool{
		name: "python_health",
		description: "Inspect the server and its Python sessions without starting Python: versions, the default " +
			"session's session_id and generation, the interpreter and whether a worker runs, the active run and " +
			"the limits. Under protocol 2026-07-28 pass server.session_id to execute_python.",
		input:       inputSchema{},
		output:      healthSchema,
		annotations: annotations(true, false, true, false),
		handle: func(context.Context, *toolCall) any {
			return healthReport{
				Server:   s.repl.Default().Health(),
				Sessions: s.sessionList(),
			}
		},
	}
}

// maxSessions is the session limit, the default session included.
const maxSessions = repl.MaxSessions
