package server

import (
	"context"
	"time"

	"github.com/iota-uz/repl-mcp/repl"
)

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// cellParams are execute_python's arguments: python_start's and yield_after.
type cellParams struct {
	execParams
	YieldAfter *yieldArg `json:"yield_after,omitempty"`
}

// executionOutput is the value of a tool that executes code: its result, the run
// it became after yield_after (docs/contract.md §5.6): python_run's live snapshot, or
// a failure before any run (a call Codex's sandbox policy does not come with under
// --sandbox inherit-codex), which has neither a run_id nor a success.
func executionOutput() []variant {
	return []variant{shape[repl.Result](), shape[repl.Snapshot]("success"), shape[toolFailure]("success")}
}

func (s *Server) executePythonTool() tool {
	return tool{
		name: "execute_python",
		description: "Run Python in a persistent, trusted local CPython session: variables, imports, the working " +
			"directory and one asyncio loop persist between calls, and top-level await works. The trailing expression " +
			"is shown as Python shows it (DataFrames as tables), without calling your classes' __repr__. " +
			"mcp.<server>.<tool>(...) calls the other MCP servers configured for the broker (mcp.search(words) finds a tool). " +
			"display(obj) and plt.show() send figures and images as images. A cell may start with !cmd or " +
			"%pip install lines; sh(cmd) runs a shell command and returns its output. Output is bounded (50,000 " +
			"bytes per stream; the complete output becomes an artifact to read with artifact_read). timeout " +
			"0.01..3600 s (default 120); a cell still running after yield_after seconds goes on in the background, and " +
			"the result says how to wait for it with python_run (python_start starts one there at once). reset=true " +
			"restarts the worker. Cancelling interrupts the code; external effects may already have happened. The " +
			"result says whether the variables survived and names its run and generation. One cell runs at a time " +
			"per session: agents working in parallel each open their own session with python_session_open.",
		output:          executionOutput(),
		annotations:     annotations(false, true, false, true),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p cellParams) (any, error) {
			req := p.request()
			if err := s.withPolicy(ctx, &req); err != nil {
				return nil, err
			}
			req.YieldAfter = s.yieldAfter(ctx, (*float64)(p.YieldAfter))
			// Reports output as it comes when the call asked for progress, and
			// stops before the reply is written.
			watch, stop := followProgress(ctx)
			defer stop()
			req.Watch = watch
			res, snap := sess.ExecuteOrYield(ctx, req)
			return s.executedOrTask(ctx, sess, res, snap, req.YieldAfter), nil
		}),
	}
}
