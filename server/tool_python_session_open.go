package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

// sessionSchema is the output of the session tools: metadata, or an error.
const sessionSchema = `{
  "type": "object",
  "oneOf": [
    {"required": ["server_id", "session_id", "generation", "environment", "project", "name"],
     "properties": ` + sessionHealthProperties + `},
    {"required": ["error"], "properties": {"error": {"type": "string"},
      "server_id": {"type": "string"}, "session_id": {"type": "string"}, "generation": {"type": "integer", "minimum": 0}}}
  ]
}`

type openParams struct {
	Name    string `json:"name"`
	Project string `json:"project"`
	Python  string `json:"python"`
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
		input: inputSchema{
			{name: "name", typ: "string", required: true, minLength: 1, maxLength: 128, desc: "A label for the session (1 to 128 bytes)."},
			{name: "project", typ: "string", minLength: 1, maxLength: 4096, desc: "The project directory: the session's cwd, and where .venv is looked for. Default: the server's project, the default session's."},
			{name: "python", typ: "string", desc: "Interpreter path or name; overrides the project's .venv."},
		},
		output:      sessionSchema,
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
