package server

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/iota-uz/repl-mcp/repl"
)

// pollParams are the arguments of python_run.
type pollParams struct {
	SessionID    sessionArg `json:"session_id,omitempty"`
	RunID        runArg     `json:"run_id,omitempty"`
	StdoutOffset *uint64    `json:"stdout_offset,omitempty" jsonschema:"Bytes of the run's stdout already read: pass the stdout_end of the previous python_run answer about this run to get only what followed. Omitted: from the start, or for a run that became an MCP task, from where earlier answers about it stopped."`
	StderrOffset *uint64    `json:"stderr_offset,omitempty" jsonschema:"Bytes of the run's stderr already read: pass the stderr_end of the previous python_run answer about this run to get only what followed. Omitted: from the start, or for a run that became an MCP task, from where earlier answers about it stopped."`
	NativeOffset *uint64    `json:"native_stderr_offset,omitempty" jsonschema:"Bytes of the run's native_stderr already read: pass the native_stderr_end of the previous python_run answer about this run to get only what followed. Omitted: from the start."`
	Wait         waitArg    `json:"wait,omitempty"`
}

func (p pollParams) offsets() repl.Offsets {
	// An offset beyond int64 is beyond any stream: it is refused as past the end.
	clamp := func(v *uint64) *int64 {
		if v == nil {
			return nil
		}
		n := int64(min(*v, math.MaxInt64))
		return &n
	}
	return repl.Offsets{Stdout: clamp(p.StdoutOffset), Stderr: clamp(p.StderrOffset), Native: clamp(p.NativeOffset)}
}

func (s *Server) pythonRunTool() tool {
	return tool{
		name: "python_run",
		description: "Inspect the active run (live stdout/stderr so far) or a retained result (the last 64 runs of " +
			"the session, each with the generation it ran under); omit run_id for the active or latest run. " +
			"To poll without re-reading, pass stdout_offset, stderr_offset and native_stderr_offset from the " +
			"previous answer's stdout_end, stderr_end and native_stderr_end; pass wait to wait for the run's end " +
			"in the same call. Reading never re-executes anything.",
		output:      []variant{shape[repl.Snapshot]("success"), shape[repl.Result](), shape[toolFailure]("success")},
		annotations: annotations(true, false, true, false),
		routed:      true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p pollParams) (any, error) {
			if p.Wait > 0 {
				// Progress flows while it waits, as during the call that ran the cell.
				watch, stop := followProgress(ctx)
				sess.Await(ctx, string(p.RunID), seconds(float64(p.Wait)), watch)
				stop()
			}
			snap, res, skipped, err := s.readRun(ctx, sess, string(p.RunID), p.offsets())
			var past *repl.OffsetError
			switch {
			case errors.As(err, &past):
				// The client's mistake in the request, like a schema violation
				// (docs/contract.md §3.5): nothing was read, nothing changed.
				return nil, fmt.Errorf("%w at /%s_offset: %s", errInvalidArguments, past.Stream, past.Error())
			case err != nil:
				return nil, err
			case snap != nil:
				// The wait its text proposes is this client's yield: under its deadline.
				return runningRun{Snapshot: snap, wait: s.yieldAfter(ctx, nil), skipped: skipped}, nil
			}
			polled := polledResult(res)
			polled.skipped = skipped
			return polled, nil
		}),
	}
}
