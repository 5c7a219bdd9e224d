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
    "server": ` + sessionHealthSchema + `,
    "broker": {"type": "object", "required": ["configured_servers", "connected_transports", "configuration_error", "max_concurrent_requests", "journal", "provenance"],
      "properties": {
        "configured_servers": {"type": "integer"}, "connected_transports": {"type": "integer"},
        "configuration_error": {"type": ["string", "null"]}, "max_concurrent_requests": {"type": "integer"},
        "authentication": {"type": "string"}, "journal": {"type": "integer"}, "journal_durable": {"type": "boolean"},
        "disabled": {"type": "boolean"},
        "provenance": {"type": "object", "properties": {"project": {"type": "string"}, "registry": {"type": "string"}, "scope": {"type": "string"}}}}},
    "sessions": ` + sessionListSchema + `
  }
}`

// sessionHealthSchema is one session's self-description (repl.Health): python_health's
// server, each session of a list, an opened or inspected session.
const sessionHealthSchema = `{"type": "object", "required": ["server_id", "session_id", "generation", "python", "limits"],
  "properties": ` + sessionHealthProperties + `}`

// sessionHealthProperties are repl.Health's fields, and an inspection's namespace.
const sessionHealthProperties = `{
    "server_id": {"type": "string"}, "session_id": {"type": "string"}, "name": {"type": "string"},
    "project": {"type": "string"}, "closed": {"type": "boolean"}, "generation": {"type": "integer", "minimum": 0},
    "version": {"type": "string"}, "runtime": {"type": "string"}, "execution_mode": {"type": "string"},
    "python_executable": {"type": "string"},
    "python": {"type": ["object", "null"], "properties": {"pid": {"type": "integer"}, "running": {"type": "boolean"}}},
    "active_run": {"type": ["string", "null"]},
    "environment": {"type": "object", "properties": {
      "source": {"type": "string"}, "python": {"type": "string"}, "chosen_by": {"type": "string"},
      "version": {"type": "string"}, "actual_python_executable": {"type": "string"},
      "version_info": {"type": "object"}, "validated": {"type": "boolean"}, "runtime_status": {"type": "string"}}},
    "limits": {"type": "object", "properties": {
      "code_bytes": {"type": "integer"}, "frame_bytes": {"type": "integer"}, "timeout_seconds": {"type": "integer"},
      "history_runs": {"type": "integer"}, "stream_bytes": {"type": "integer"}, "worker_rss_mib": {"type": "integer"}}},
    "memory_limit": {"type": "string"},
    "spare": {"type": "object", "description": "the pre-started worker waiting for this session's interpreter and project (off with --no-spare-worker)",
      "properties": {"enabled": {"type": "boolean"}, "ready": {"type": "boolean"}, "pid": {"type": "integer"}, "rss_bytes": {"type": "integer"}}},
    "namespace": {"type": "object", "description": "python_session_inspect with include_namespace only"}}`

// sessionListSchema is python_session_list's answer, and python_health's sessions.
const sessionListSchema = `{"type": "object", "required": ["server_id", "sessions", "limit"],
  "properties": {"server_id": {"type": "string"}, "sessions": {"type": "array", "items": ` + sessionHealthSchema + `},
    "limit": {"type": "integer"}}}`

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
			"journal size). Over HTTP under protocol 2026-07-28 pass its session_id to execute_python.",
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
