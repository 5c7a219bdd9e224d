package server

import (
	"context"
	"fmt"
	"strings"

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
    "python": {"type": ["object", "null"], "properties": {"pid": {"type": "integer"}, "running": {"type": "boolean"},
      "path_head": {"type": "string", "description": "the directory first on the worker's PATH: the interpreter's bin directory"},
      "virtual_env": {"type": "string", "description": "VIRTUAL_ENV in the worker's environment, when its interpreter is a venv's"}}},
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
    "snapshot": {"type": "object", "description": "the session's snapshot of its variables (off with --no-snapshot), and the one python_session_restore would load",
      "properties": {"enabled": {"type": "boolean"}, "status": {"type": "string", "enum": ["off", "none", "saving", "saved", "failed"]},
        "snapshot": {"type": "string"}, "saved_at": {"type": "string"}, "variables": {"type": "integer"}, "bytes": {"type": "integer"},
        "skipped": {"type": "integer"}, "stale": {"type": "integer"}, "took_ms": {"type": "number"}, "error": {"type": "string"}, "reason": {"type": "string"}, "restorable": ` + restorableSchema + `}},
    "sandbox": ` + sandboxSchema + `,
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

// modelText is python_health for the model (healthText).
func (h healthReport) modelText() reply { return reply{body: healthText(h)} }

// healthText is python_health for the model: the server, the default session
// once, the other sessions while there is room, the limits and the broker, under
// healthTextLimit.
func healthText(h healthReport) string {
	var b strings.Builder
	s := h.Server
	fmt.Fprintf(&b, "repl-mcp %s: %s\n", s.Version, sandboxText(s.Sandbox))
	fmt.Fprintf(&b, "Default session: session_id %s, generation %d: %s%s.\n", s.SessionID, s.Generation, workerState(s), spareText(s.Spare))
	fmt.Fprintf(&b, "Python: %s. Project: %s.%s\n", pythonText(s), cutPath(s.Project), shellText(s))
	b.WriteString(savedText(s.Snapshot) + "\n")
	l := s.Limits
	rss := "no RSS budget"
	if l.WorkerRSSMiB > 0 {
		rss = fmt.Sprintf("worker RSS %d MiB", l.WorkerRSSMiB)
	}
	// timeout_seconds is the largest timeout a call may pass, not the one it gets.
	fmt.Fprintf(&b, "Limits: code %d KiB, output %s bytes per stream, timeout %d s unless a call passes one (at most %d s), %s, history %d runs.\n",
		l.CodeBytes/1024, count(l.StreamBytes), int(repl.DefaultTimeout.Seconds()), l.TimeoutSeconds, rss, l.HistoryRuns)
	b.WriteString(brokerText(h.Broker) + "\n")
	others := make([]repl.Health, 0, len(h.Sessions.Sessions))
	for _, o := range h.Sessions.Sessions {
		if o.SessionID != s.SessionID {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		fmt.Fprintf(&b, "No other sessions (at most %d).", h.Sessions.Limit)
		return b.String()
	}
	fmt.Fprintf(&b, "Other sessions (%d; at most %d in all):", len(others), h.Sessions.Limit)
	for i, o := range others {
		line := "\n- " + sessionLine(o)
		more := fmt.Sprintf("\n- and %d more: python_session_list", len(others)-i)
		if b.Len()+len(line)+len(more) > healthTextLimit {
			b.WriteString(more)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func brokerText(h broker.Health) string {
	if h.Disabled {
		return "Broker: disabled; cells cannot call other MCP servers."
	}
	journal := "in memory"
	if h.JournalDurable {
		journal = "durable"
	}
	text := fmt.Sprintf("Broker: %d server%s configured, %d connected; journal %d record%s (%s).",
		h.ConfiguredServers, plural(h.ConfiguredServers), h.ConnectedTransports, h.Journal, plural(h.Journal), journal)
	if h.ConfigurationError != nil {
		text += " Registry error: " + cutFooter(*h.ConfigurationError, messageShown)
	}
	return text
}

// spareText says that a spare worker waits, and what memory it holds.
func spareText(sp repl.SpareState) string {
	if !sp.Ready {
		return ""
	}
	return fmt.Sprintf("; a spare worker waits for a reset or a new session (pid %d, %s MiB)", sp.Pid, count(int(sp.RSSBytes>>20)))
}
