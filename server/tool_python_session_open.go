package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

type openParams struct {
	Name    string `json:"name" schema:"minLength=1,maxLength=128" jsonschema:"A label for the session (1 to 128 bytes)."`
	Project string `json:"project,omitempty" schema:"minLength=1,maxLength=4096" jsonschema:"The project directory: the session's cwd, and where .venv is looked for. Default: the server's project, the default session's."`
	Python  string `json:"python,omitempty" jsonschema:"Interpreter path or name; overrides the project's .venv."`
}

func (s *Server) pythonSessionOpenTool() tool {
	return tool{
		name: "python_session_open",
		description: "Open an independent, lazy Python session for a project: its own variables, cwd, worker, " +
			"active run, history and generation. Parallel agents (sub-agents) share the default session, so each " +
			"opens its own here: {\"name\": \"<task>\"} is enough. The interpreter is the explicit python, else the project's " +
			".venv/bin/python (which must be valid), else the server default; it is probed now (at most 10 s) " +
			"and the worker starts on the first execution. Pass the returned session_id to the other tools. " +
			"Names are labels only; at most 32 sessions including the default.",
		output:      []variant{shape[repl.Health](), shape[toolFailure]()},
		annotations: annotations(false, true, false, true),
		handler: handle(func(ctx context.Context, _ *repl.Session, p openParams) (any, error) {
			sess, err := s.repl.Open(ctx, repl.OpenRequest{Name: p.Name, Project: p.Project, Python: p.Python})
			if err != nil {
				return nil, err
			}
			return opened(sess.Health()), nil
		}),
	}
}

// opened is python_session_open's answer: the new session's health, whose JSON it is.
type opened repl.Health

// modelText is the new session's line and what to do with it.
func (o opened) modelText() reply {
	return reply{body: "Opened session " + sessionLine(repl.Health(o)) +
		"\nPass its session_id to the other tools; its worker starts on the first execution."}
}
