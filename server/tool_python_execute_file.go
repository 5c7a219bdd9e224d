package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

type fileParams struct {
	SessionID          sessionArg     `json:"session_id"`
	Path               string         `json:"path" schema:"maxLength=4096" jsonschema:"The file; relative paths are taken against the session's project."`
	Argv               []string       `json:"argv,omitempty" schema:"maxItems=128,default=[]" jsonschema:"Arguments after the path, passed literally (no shell quoting)."`
	Mode               string         `json:"mode,omitempty" schema:"enum=persistent|fresh,default=persistent" jsonschema:"persistent: the session's namespace; fresh: a separate worker."`
	Timeout            timeoutArg     `json:"timeout,omitempty"`
	ExpectedGeneration *generationArg `json:"expected_generation,omitempty"`
	YieldAfter         *yieldArg      `json:"yield_after,omitempty"`
}

func (s *Server) pythonExecuteFileTool() tool {
	return tool{
		name: "python_execute_file",
		description: "Execute a saved Python file (at most 256 KiB, PEP 263 encodings) in the session's interpreter " +
			"and project, with its real filename in tracebacks, sys.argv = [path] + argv (literal strings), " +
			"__name__ == \"__main__\" and SystemExit as exit_code. mode=persistent shares the session's variables; " +
			"mode=fresh runs in a separate worker and leaves the persistent namespace untouched. Timeout, " +
			"cancel, expected_generation and history work as for execute_python.",
		output:      executionOutput(),
		annotations: annotations(false, true, false, true),
		routed:      true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p fileParams) (any, error) {
			req := repl.ExecRequest{
				Argv:               p.Argv,
				Fresh:              p.Mode == "fresh",
				Timeout:            seconds(float64(p.Timeout)),
				ExpectedGeneration: (*uint64)(p.ExpectedGeneration),
				YieldAfter:         s.yieldAfter(ctx, (*float64)(p.YieldAfter)),
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
