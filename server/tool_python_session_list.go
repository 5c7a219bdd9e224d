package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

const listSchema = sessionListSchema

func (s *Server) pythonSessionListTool() tool {
	return tool{
		name:        "python_session_list",
		description: "List the sessions (sorted by name) with their environments, generations and active runs, without starting any worker.",
		input:       inputSchema{},
		output:      listSchema,
		annotations: annotations(true, false, false, true),
		handler: handle(func(context.Context, *repl.Session, noParams) (any, error) {
			return s.sessionList(), nil
		}),
	}
}

func (s *Server) sessionList() sessionList {
	return sessionList{ServerID: s.repl.ServerID(), Sessions: s.repl.List(), Limit: maxSessions}
}
