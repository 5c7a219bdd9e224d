package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

const healthSchema = `{
  "type": "object",
  "required": ["server", "broker", "sessions"],
  "properties": {
    "server": {"type": "object", "required": ["server_id", "session_id", "generation", "python", "limits"]},
    "broker": {"type": "object", "required": ["configured_servers", "connected_transports", "configuration_error", "max_concurrent_requests", "journal", "provenance"]},
    "sessions": {"type": "object", "required": ["server_id", "sessions", "limit"]}
  }
}`

// healthReport is python_health's answer.
type healthReport struct {
	Server   repl.Health   `json:"server"`
	Broker   broker.Health `json:"broker"`
	Sessions sessionList   `json:"sessions"`
}

type sessionList struct {
	ServerID string        `json:"server_id"`
	Sessions []repl.Health `json:"sessions"`
	Limit    int           `json:"limit"`
}

func (s *Server) pythonHealthTool() tool {
	return tool{
		name: "python_health",
		description: "Inspect the server and its Python sessions without starting Python or connecting any MCP server: " +
			"versions, the default session's session_id and generation, the interpreter and whether a worker runs, " +
			"the active run, the limits, and the broker (configured servers, live connections, registry errors, " +
			"journal size). Over HTTP under protocol 2026-07-28 pass server.session_id to execute_python.",
		input:       inputSchema{},
		output:      healthSchema,
		annotations: annotations(true, false, true, false),
		handler: handle(func(context.Context, *repl.Session, noParams) (any, error) {
			return healthReport{
				Server:   s.repl.Default().Health(),
				Broker:   s.brokerHealth(),
				Sessions: s.sessionList(),
			}, nil
		}),
	}
}

// brokerHealth reports the default session's broker; it connects nothing.
func (s *Server) brokerHealth() broker.Health {
	if s.brokers == nil {
		return broker.Health{Disabled: true, MaxConcurrentRequests: broker.MaxConcurrentRequests}
	}
	return s.brokers.Root().Health()
}

// maxSessions is the session limit, the default session included.
const maxSessions = repl.MaxSessions
