package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/iota-uz/repl-mcp/repl"
)

func (s *Server) pythonStartTool() tool {
	return tool{
		name: "python_start",
		description: "Start a long Python execution and return its run_id at once; poll python_run for live output and " +
			"the result, stop it with python_cancel. One run at a time per session; the server owns the run " +
			"until it completes or the server shuts down. Same code, reset, timeout, expected_generation and " +
			"session_id semantics as execute_python.",
		output:          []variant{shape[repl.StartInfo](), shape[toolFailure]()},
		annotations:     annotations(false, true, false, true),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p execParams) (any, error) {
			req := p.request()
			if err := s.withPolicy(ctx, &req); err != nil {
				return nil, err
			}
			info, failed := sess.Start(req)
			if failed != nil {
				// Nothing started: answer with the error alone, so that no run_id
				// can be mistaken for a run.
				return nil, errors.New(*failed.Error)
			}
			return started(*info), nil
		}),
	}
}

// started is python_start's answer: the run started, whose JSON it is.
type started repl.StartInfo

// modelText names the run and the tools that follow it.
func (v started) modelText() reply {
	return reply{body: fmt.Sprintf("Started run %s, in generation %d. Poll python_run with run_id %s for its output and "+
		"result; stop it with python_cancel.", v.RunID, v.Generation, v.RunID)}
}
