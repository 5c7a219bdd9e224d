package server

import (
	"github.com/iota-uz/repl-mcp/repl"
)

// The parameters shared by the tools. They are built on each use so that no tool
// can change another's.

func sessionIDParam() param {
	return param{
		name: "session_id", typ: "string", maxLength: 128,
		desc: "Session to use: take it from python_health's session_id (or python_session_open's). Omitted means the default session, except over HTTP under protocol 2026-07-28, where several clients share the server and it is required.",
	}
}

func runIDParam() param {
	return param{
		name: "run_id", typ: "string", maxLength: 128,
		desc: "Run id from execute_python or python_start; omit for the active or latest run.",
	}
}

func codeParam() param {
	return param{
		name: "code", typ: "string", required: true, maxLength: repl.MaxCodeBytes,
		desc: "Python source. The value of a trailing expression is shown; top-level await works. At most 256 KiB.",
	}
}

func expectedGenerationParam() param {
	return param{
		name: "expected_generation", typ: "integer", min: bound(0),
		desc:    "Reject with STATE_CHANGED before executing code if Python state changed (the generation you last saw).",
		message: "expected_generation must be a nonnegative integral u64",
	}
}

func resetParam() param {
	return param{
		name: "reset", typ: "boolean", def: false,
		desc: "Restart the worker first: clears variables, imports, cwd and environment changes.",
	}
}

func timeoutParam() param {
	return param{
		name: "timeout", typ: "number", min: bound(0.01), max: bound(3600), def: repl.DefaultTimeout.Seconds(),
		desc: "Seconds before the cell is interrupted (SIGINT, then SIGKILL after 2 s). 0.01 to 3600, default 120.",
	}
}

func executionInput() inputSchema {
	return inputSchema{codeParam(), sessionIDParam(), expectedGenerationParam(), resetParam(), timeoutParam()}
}

func withRequired(p param) param {
	p.required = true
	return p
}

func yieldAfterParam() param {
	return param{
		name: "yield_after", typ: "number", min: bound(0), max: bound(repl.MaxTimeout.Seconds()),
		desc: "Seconds after which a cell still running goes on in the background as its run_id and the call " +
			"returns status running with the output so far; wait for the rest with python_run (wait). 0 waits " +
			"for the end. Default 50 for Claude Code and Codex, 0 for other clients, unless the server's " +
			"--yield-after sets it.",
	}
}
