package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
)

func (s *Server) pythonSessionListTool() tool {
	return tool{
		name:        "python_session_list",
		description: "List the sessions (sorted by name) with their environments, generations and active runs, without starting any worker.",
		output:      []variant{shape[sessionList]()},
		annotations: annotations(true, false, false, true),
		handler: handle(func(context.Context, *repl.Session, noParams) (any, error) {
			return s.sessionList(), nil
		}),
	}
}

func (s *Server) sessionList() sessionList {
	return sessionList{ServerID: s.repl.ServerID(), Sessions: s.repl.List(), Limit: maxSessions}
}

// modelText lists the sessions, one a line.
func (l sessionList) modelText() reply { return reply{body: listText(l)} }

func listText(l sessionList) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d session%s (at most %d):", len(l.Sessions), plural(len(l.Sessions)), l.Limit)
	for _, h := range l.Sessions {
		b.WriteString("\n- " + sessionLine(h))
	}
	return b.String()
}
