package server

import (
	"context"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/repl"
)

type inspectParams struct {
	SessionID        string `json:"session_id"`
	IncludeNamespace bool   `json:"include_namespace"`
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
		handler: handle(func(ctx context.Context, sess *repl.Session, p inspectParams) (any, error) {
			h, namespace, err := sess.Inspect(ctx, p.IncludeNamespace)
			if err != nil {
				return nil, err
			}
			return inspection{Health: h, Namespace: namespace}, nil
		}),
	}
}
