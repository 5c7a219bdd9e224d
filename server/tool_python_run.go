package server

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/iota-uz/repl-mcp/repl"
)

const runSchema = `{
  "type": "object",
  "oneOf": [
    {"required": ` + snapshotRequired + `, "not": {"required": ["success"]}, "properties": ` + snapshotProperties + `},
    {"required": ` + executionRequired + `, "properties": ` + executionProperties + `},
    {"required": ["error"], "not": {"required": ["success"]}, "properties": {"error": {"type": "string"},
      "server_id": {"type": "string"}, "session_id": {"type": "string"}, "generation": {"type": "integer", "minimum": 0}}}
  ]
}`

// snapshotRequired are the fields every live snapshot of a run has (repl.Snapshot):
// python_run's answer for a run still going, and an execution's after yield_after.
const snapshotRequired = `["run_id", "status", "stdout", "stderr", "stdout_start", "stdout_end", "stderr_start", "stderr_end", "native_stderr_end"]`

// snapshotProperties are a live snapshot's fields.
const snapshotProperties = `{
      "server_id": {"type": "string"}, "session_id": {"type": "string"}, "generation": {"type": "integer", "minimum": 0},
      "run_id": {"type": "string"},
      "status": {"type": "string", "enum": ["starting", "running"]},
      "elapsed_ms": {"type": "number"},
      "stdout": {"type": "string"}, "stderr": {"type": "string"}, "native_stderr": {"type": "string"},
      "stdout_start": {"type": "integer"}, "stdout_end": {"type": "integer"},
      "stderr_start": {"type": "integer"}, "stderr_end": {"type": "integer"},
      "native_stderr_start": {"type": "integer"}, "native_stderr_end": {"type": "integer"},
      "output_limit_bytes_per_stream": {"type": "integer"},
      "truncated": {"type": "object", "properties": {"stdout": {"type": "boolean"}, "stderr": {"type": "boolean"}, "return": {"type": "boolean"}}}}`

// runParams are the arguments of python_cancel.
type runParams struct {
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
}

// pollParams are the arguments of python_run.
type pollParams struct {
	SessionID    string  `json:"session_id"`
	RunID        string  `json:"run_id"`
	StdoutOffset *uint64 `json:"stdout_offset"`
	StderrOffset *uint64 `json:"stderr_offset"`
	NativeOffset *uint64 `json:"native_stderr_offset"`
	Wait         float64 `json:"wait"`
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

func outputOffsetParam(stream string) param {
	omitted := "Omitted: from the start."
	if stream != "native_stderr" {
		omitted = "Omitted: from the start, or for a run that became an MCP task, from where earlier answers about it stopped."
	}
	return param{
		name: stream + "_offset", typ: "integer", min: bound(0),
		desc: "Bytes of the run's " + stream + " already read: pass the " + stream + "_end of the previous python_run " +
			"answer about this run to get only what followed. " + omitted,
		message: stream + "_offset must be a nonnegative integral u64",
	}
}

func waitParam() param {
	return param{
		name: "wait", typ: "number", min: bound(0), max: bound(repl.MaxWait.Seconds()), def: 0,
		desc: fmt.Sprintf("Seconds to wait for the run to end before answering (at most %d): the answer comes "+
			"when it ends or when wait has passed, whichever is first. 0 answers at once.", int(repl.MaxWait.Seconds())),
	}
}

func (s *Server) pythonRunTool() tool {
	return tool{
		name: "python_run",
		description: "Inspect the active run (live stdout/stderr so far) or a retained result (the last 64 runs of " +
			"the session, each with the generation it ran under); omit run_id for the active or latest run. " +
			"To poll without re-reading, pass stdout_offset, stderr_offset and native_stderr_offset from the " +
			"previous answer's stdout_end, stderr_end and native_stderr_end; pass wait to wait for the run's end " +
			"in the same call. Reading never re-executes anything.",
		input: inputSchema{
			sessionIDParam(), runIDParam(), outputOffsetParam("stdout"), outputOffsetParam("stderr"),
			outputOffsetParam("native_stderr"), waitParam(),
		},
		output:      runSchema,
		annotations: annotations(true, false, true, false),
		routed:      true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p pollParams) (any, error) {
			if p.Wait > 0 {
				// Progress flows while it waits, as during the call that ran the cell.
				watch, stop := followProgress(ctx)
				sess.Await(ctx, p.RunID, seconds(p.Wait), watch)
				stop()
			}
			snap, res, skipped, err := s.readRun(ctx, sess, p.RunID, p.offsets())
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
