package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

type fileParams struct {
	SessionID          string   `json:"session_id"`
	Path               string   `json:"path"`
	Argv               []string `json:"argv"`
	Mode               string   `json:"mode"`
	Timeout            float64  `json:"timeout"`
	ExpectedGeneration *uint64  `json:"expected_generation"`
	YieldAfter         *float64 `json:"yield_after"`
}

func (s *Server) pythonExecuteFileTool() tool {
	return tool{
		name: "python_execute_file",
		description: "Execute a saved Python file (at most 256 KiB, PEP 263 encodings) in the session's interpreter " +
			"and project, with its real filename in tracebacks, sys.argv = [path] + argv (literal strings), " +
			"__name__ == \"__main__\" and SystemExit as exit_code. mode=persistent shares the session's variables; " +
			"mode=fresh runs in a separate worker and leaves the persistent namespace untouched. Timeout, " +
			"cancel, expected_generation and history work as for execute_python.",
		input: inputSchema{
			withRequired(sessionIDParam()),
			{name: "path", typ: "string", required: true, maxLength: 4096, desc: "The file; relative paths are taken against the session's project."},
			{name: "argv", typ: "array", items: "string", maxItems: 128, def: []string{}, desc: "Arguments after the path, passed literally (no shell quoting)."},
			{name: "mode", typ: "string", enum: []string{"persistent", "fresh"}, def: "persistent", desc: "persistent: the session's namespace; fresh: a separate worker."},
			timeoutParam(),
			expectedGenerationParam(),
			yieldAfterParam(),
		},
		output:      executionResultSchema,
		annotations: annotations(false, true, false, true),
		routed:      true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p fileParams) (any, error) {
			req := repl.ExecRequest{
				Argv:               p.Argv,
				Fresh:              p.Mode == "fresh",
				Timeout:            seconds(p.Timeout),
				ExpectedGeneration: p.ExpectedGeneration,
				YieldAfter:         s.yieldAfter(ctx, p.YieldAfter),
			}
			if err := s.withPolicy(ctx, &req); err != nil {
				return nil, err
			}
			// Reports output as it comes when the call asked for progress, and
			// stops before the reply is written.
			watch, stop := followProgress(ctx)
			defer stop()
			req.Watch = watch
			res, snap := sess.ExecuteFile(ctx, p.Path, req)
			return s.executedOrTask(ctx, sess, res, snap, req.YieldAfter), nil
		}),
	}
}
