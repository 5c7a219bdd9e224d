package server

import (
	"context"
	"time"

	"github.com/iota-uz/repl-mcp/repl"
)

// executionResultSchema is the output schema of an execution result (reference 3.1,
// and 3.8's exit_code; 4.1's artifact of a large trailing value; the background work,
// the images and the artifacts of cut output streams of docs/contract.md §4.1), or of
// the run an execution became after yield_after (§5.6): python_run's live snapshot.
const executionResultSchema = `{
  "type": "object",
  "oneOf": [
    {"required": ` + executionRequired + `, "properties": ` + executionProperties + `},
    {"required": ` + snapshotRequired + `, "not": {"required": ["success"]}, "properties": ` + snapshotProperties + `}
  ]
}`

// executionRequired are the fields every execution result has.
const executionRequired = `["run_id", "success", "stdout", "stderr", "return_value", "error", "elapsed_ms", "truncated", "state"]`

// executionProperties are an execution result's fields, also python_run's for a run
// that is done (tool_python_run.go), whose offsets they include.
const executionProperties = `{
    "run_id": {"type": "string"},
    "success": {"type": "boolean"},
    "stdout": {"type": "string"},
    "stderr": {"type": "string"},
    "return_value": {"type": ["string", "null"]},
    "value": {"description": "the trailing value as JSON, when it is exact JSON"},
    "error": {"type": ["string", "null"]},
    "elapsed_ms": {"type": "number"},
    "truncated": {
      "type": "object",
      "properties": {"stdout": {"type": "boolean"}, "stderr": {"type": "boolean"}, "return": {"type": "boolean"}}
    },
    "state": {"type": "string", "enum": ["preserved", "cleared"]},
    "state_reset": {"type": "boolean"},
    "state_reset_reason": {"type": "string", "enum": ["reset", "lost", "restart", "released"],
      "description": "why the run's worker is new, when it replaced one: a reset, lost variables (a crash, a kill, the RSS budget), an earlier server lifetime's session, an idle release"},
    "server_started": {"type": "string", "description": "when this server started, with state_reset_reason restart"},
    "restorable": ` + restorableSchema + `,
    "restored": ` + restoreReportSchema + `,
    "execution_mode": {"type": "string", "enum": ["persistent", "fresh"]},
    "background_tasks_cancelled": {"type": "integer"},
    "background_threads": {"type": "array", "items": {"type": "string"}},
    "background_output": {
      "type": "object",
      "required": ["stdout", "stderr", "truncated"],
      "properties": {"stdout": {"type": "string"}, "stderr": {"type": "string"}, "truncated": {"type": "boolean"}}
    },
    "output_artifacts": {
      "type": "object",
      "properties": {"stdout": ` + artifactRefSchema + `, "stderr": ` + artifactRefSchema + `}
    },
    "exit_code": {"type": "integer"},
    "artifact": ` + artifactRefSchema + `,
    "artifact_error": {"type": "string"},
    "images": {"type": "array", "items": ` + imageInfoSchema + `},
    "image_artifacts": {"type": "array", "items": ` + artifactRefSchema + `},
    "stdout_start": {"type": "integer"}, "stdout_end": {"type": "integer"},
    "stderr_start": {"type": "integer"}, "stderr_end": {"type": "integer"},
    "text_truncated": {"type": "boolean"},
    "server_id": {"type": "string"},
    "session_id": {"type": "string"},
    "generation": {"type": "integer", "minimum": 0},
    "sandbox": ` + sandboxNoteSchema + `
  }`

// imageInfoSchema is what a result says of an image it shows (repl.Image).
const imageInfoSchema = `{"type": "object", "required": ["mime", "bytes", "width", "height"],
  "properties": {"mime": {"type": "string"}, "bytes": {"type": "integer"}, "width": {"type": "integer"},
    "height": {"type": "integer"}, "omitted": {"type": "string"}}}`

// execParams are the arguments of execute_python and python_start (executionInput).
type execParams struct {
	Code               string  `json:"code"`
	SessionID          string  `json:"session_id"`
	ExpectedGeneration *uint64 `json:"expected_generation"`
	Reset              bool    `json:"reset"`
	Timeout            float64 `json:"timeout"`
}

func (p execParams) request() repl.ExecRequest {
	return repl.ExecRequest{
		Code:               p.Code,
		Reset:              p.Reset,
		ExpectedGeneration: p.ExpectedGeneration,
		Timeout:            seconds(p.Timeout),
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// cellParams are execute_python's arguments: python_start's and yield_after.
type cellParams struct {
	Code               string   `json:"code"`
	SessionID          string   `json:"session_id"`
	ExpectedGeneration *uint64  `json:"expected_generation"`
	Reset              bool     `json:"reset"`
	Timeout            float64  `json:"timeout"`
	YieldAfter         *float64 `json:"yield_after"`
}

func (p cellParams) request() repl.ExecRequest {
	return execParams{Code: p.Code, ExpectedGeneration: p.ExpectedGeneration, Reset: p.Reset, Timeout: p.Timeout}.request()
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
		input:           append(executionInput(), yieldAfterParam()),
		output:          executionResultSchema,
		annotations:     annotations(false, true, false, true),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p cellParams) (any, error) {
			req := p.request()
			if err := s.withPolicy(ctx, &req); err != nil {
				return nil, err
			}
			req.YieldAfter = s.yieldAfter(ctx, p.YieldAfter)
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
