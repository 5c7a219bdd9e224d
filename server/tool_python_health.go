package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

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
		output:      []variant{shape[healthReport]()},
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
