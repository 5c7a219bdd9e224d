package server

import (
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

// The argument types several tools share, or whose bounds are Go constants that no
// struct tag can name. A field of one of these types gets the schema declared here
// (jsonschema.ForOptions.TypeSchemas); a jsonschema tag on the field still replaces
// the description. Their Go kinds are those decode fills (schema.go).
type (
	// sessionArg names a session: any tool's session_id.
	sessionArg string
	// runArg names a run: python_run's and python_cancel's run_id.
	runArg string
	// codeArg is a cell's Python source.
	codeArg string
	// generationArg is a generation the caller last saw (expected_generation).
	generationArg uint64
	// timeoutArg is a cell's timeout, in seconds.
	timeoutArg float64
	// yieldArg is when a cell still running goes on in the background, in seconds.
	yieldArg float64
	// waitArg is how long python_run waits for a run's end, in seconds.
	waitArg float64
	// artifactIDArg names an artifact.
	artifactIDArg string
	// readLengthArg is how many bytes artifact_read reads.
	readLengthArg uint64
)

// argTypes are the schemas of the shared argument types.
var argTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[sessionArg](): {
		Type: "string", MaxLength: jsonschema.Ptr(128),
		Description: "Session to use: take it from python_health's session_id (or python_session_open's). Omitted means the default session, except over HTTP under protocol 2026-07-28, where several clients share the server and it is required.",
	},
	reflect.TypeFor[runArg](): {
		Type: "string", MaxLength: jsonschema.Ptr(128),
		Description: "Run id from execute_python or python_start; omit for the active or latest run.",
	},
	reflect.TypeFor[codeArg](): {
		Type: "string", MaxLength: jsonschema.Ptr(repl.MaxCodeBytes),
		Description: "Python source. The value of a trailing expression is shown; top-level await works. At most 256 KiB.",
	},
	reflect.TypeFor[generationArg](): {
		Type: "integer", Minimum: jsonschema.Ptr(0.0),
		Description: "Reject with STATE_CHANGED before executing code if Python state changed (the generation you last saw).",
	},
	reflect.TypeFor[timeoutArg](): {
		Type: "number", Minimum: jsonschema.Ptr(0.01), Maximum: jsonschema.Ptr(repl.MaxTimeout.Seconds()),
		Default:     fmt.Appendf(nil, "%g", repl.DefaultTimeout.Seconds()),
		Description: "Seconds before the cell is interrupted (SIGINT, then SIGKILL after 2 s). 0.01 to 3600, default 120.",
	},
	reflect.TypeFor[yieldArg](): {
		Type: "number", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(repl.MaxTimeout.Seconds()),
		Description: "Seconds after which a cell still running goes on in the background as its run_id and the call " +
			"returns status running with the output so far; wait for the rest with python_run (wait). 0 waits " +
			"for the end. Default 50 for Claude Code and Codex, 0 for other clients, unless the server's " +
			"--yield-after sets it.",
	},
	reflect.TypeFor[waitArg](): {
		Type: "number", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(repl.MaxWait.Seconds()), Default: []byte("0"),
		Description: fmt.Sprintf("Seconds to wait for the run to end before answering (at most %d): the answer comes "+
			"when it ends or when wait has passed, whichever is first. 0 answers at once.", int(repl.MaxWait.Seconds())),
	},
	reflect.TypeFor[artifactIDArg](): {
		Type: "string", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(128),
		Description: "The artifact id: the one a result names (artifact <id>), or artifact_create's.",
	},
	reflect.TypeFor[readLengthArg](): {
		Type: "integer", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(float64(artifacts.MaxReadLength)),
		Default:     fmt.Appendf(nil, "%d", artifacts.MaxReadLength),
		Description: "Bytes to read, at most 65536; clipped to the end.",
	},
}

// argMessages replace the generic reason for a bad value of these properties, where
// the contract names one (docs/contract.md §3.1, §3.5, §3.9).
var argMessages = map[string]string{
	"expected_generation":  "expected_generation must be a nonnegative integral u64",
	"offset":               "offset/length must be a nonnegative integral u64",
	"stdout_offset":        "stdout_offset must be a nonnegative integral u64",
	"stderr_offset":        "stderr_offset must be a nonnegative integral u64",
	"native_stderr_offset": "native_stderr_offset must be a nonnegative integral u64",
}

// execParams are the arguments of python_start, and execute_python's but one.
type execParams struct {
	Code               codeArg        `json:"code"`
	SessionID          sessionArg     `json:"session_id,omitempty"`
	ExpectedGeneration *generationArg `json:"expected_generation,omitempty"`
	Reset              bool           `json:"reset,omitempty" schema:"default=false" jsonschema:"Restart the worker first: clears variables, imports, cwd and environment changes."`
	Timeout            timeoutArg     `json:"timeout,omitempty"`
}

func (p execParams) request() repl.ExecRequest {
	return repl.ExecRequest{
		Code:               string(p.Code),
		Reset:              p.Reset,
		ExpectedGeneration: (*uint64)(p.ExpectedGeneration),
		Timeout:            seconds(float64(p.Timeout)),
	}
}
