package server

import (
	"context"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/repl"
)

type inspectArgs struct {
	IncludeNamespace bool `json:"include_namespace"`
}

// inspection is session metadata plus, on request, the namespace inventory.
type inspection struct {
	repl.Health
	Namespace json.RawMessage `json:"namespace,omitempty"`
}

func (s *Server) pythonSessionInspectTool() tool {
	return tool{
		name: "python_session_inspect",
		description: "Inspect a session's metadata (environment, generation, active run). include_namespace=true " +
			"adds bounded variable names and exact builtin types without calling repr, getattr or property " +
			"hooks; it needs an idle session and starts its worker if none runs.",
		input: inputSchema{
			sessionIDParam(),
			{name: "include_namespace", typ: "boolean", def: false, desc: "Also list the variables (names and types only)."},
		},
		output:      sessionSchema,
		annotations: annotations(true, false, false, true),
		routed:      true,
		handle: func(ctx context.Context, call *toolCall) any {
			var args inspectArgs
			decodeArgs(call.args, &args)
			h, namespace, err := call.session.Inspect(ctx, args.IncludeNamespace)
			if err != nil {
				return identified(call.session, map[string]any{"error": err.Error()})
			}
			return inspection{Health: h, Namespace: namespace}
		},
	}
}
