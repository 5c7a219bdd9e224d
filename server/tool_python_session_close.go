package server

import (
	"context"
	"fmt"

	"github.com/iota-uz/repl-mcp/repl"
)

type closeParams struct {
	SessionID sessionArg `json:"session_id"`
}

// closed is python_session_close's answer: the closed session's last identity.
type closed struct {
	Closed bool `json:"closed"`
	identity
}

func (s *Server) pythonSessionCloseTool() tool {
	return tool{
		name: "python_session_close",
		description: "Close a session: cancel and reap its active run and worker; other sessions keep running. " +
			"The default session cannot be closed (use execute_python with reset=true to clear it).",
		output:      []variant{shape[closed](), shape[toolFailure]()},
		annotations: annotations(false, true, false, true),
		handler: handle(func(_ context.Context, _ *repl.Session, p closeParams) (any, error) {
			h, err := s.repl.CloseSession(string(p.SessionID))
			if err != nil {
				return nil, err
			}
			return closed{Closed: true, identity: identity{ServerID: h.ServerID, SessionID: h.SessionID, Generation: h.Generation}}, nil
		}),
	}
}

// modelText says which session closed.
func (c closed) modelText() reply {
	return reply{body: fmt.Sprintf("Closed session %s at generation %d.", c.SessionID, c.Generation)}
}
