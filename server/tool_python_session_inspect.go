package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
)

type inspectParams struct {
	SessionID        sessionArg `json:"session_id,omitempty"`
	IncludeNamespace bool       `json:"include_namespace,omitempty" schema:"default=false" jsonschema:"Also list the variables (names and types only)."`
}

// inspection is session metadata plus, on request, the namespace inventory.
type inspection struct {
	repl.Health
	Namespace json.RawMessage `json:"namespace,omitempty" schema:"type=object" jsonschema:"python_session_inspect with include_namespace only"`
}

func (s *Server) pythonSessionInspectTool() tool {
	return tool{
		name: "python_session_inspect",
		description: "Inspect a session's metadata (environment, generation, active run). include_namespace=true " +
			"adds bounded variable names and exact builtin types without calling repr, getattr or property " +
			"hooks; it needs an idle session and starts its worker if none runs.",
		output:      []variant{shape[inspection](), shape[toolFailure]()},
		annotations: annotations(true, false, false, true),
		routed:      true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p inspectParams) (any, error) {
			var policy *repl.CallPolicy
			if p.IncludeNamespace {
				var err error
				if policy, err = s.callPolicy(ctx); err != nil {
					return nil, err
				}
			}
			h, namespace, err := sess.Inspect(ctx, p.IncludeNamespace, policy)
			if err != nil {
				return nil, err
			}
			return inspection{Health: h, Namespace: namespace}, nil
		}),
	}
}

// modelText is the session's line, then its variables' names and types.
func (in inspection) modelText() reply { return reply{body: inspectText(in)} }

func inspectText(in inspection) string {
	text := sessionLine(in.Health)
	if len(in.Namespace) == 0 {
		return text
	}
	var ns struct {
		Variables []struct {
			Name   string `json:"name"`
			Type   string `json:"type"`
			Length *int   `json:"length"`
		} `json:"variables"`
		Total   int `json:"total_namespace_entries"`
		Omitted int `json:"omitted_including_helpers"`
	}
	if err := json.Unmarshal(in.Namespace, &ns); err != nil {
		return text + "\nNamespace: " + string(in.Namespace)
	}
	if len(ns.Variables) == 0 {
		return text + fmt.Sprintf("\nNo variables (%d namespace entries, helpers included).", ns.Total)
	}
	names := make([]string, 0, min(len(ns.Variables), namesShown))
	for i, v := range ns.Variables {
		if i == namesShown {
			break
		}
		n := v.Name + ": " + v.Type
		if v.Length != nil {
			n += fmt.Sprintf(" (length %d)", *v.Length)
		}
		names = append(names, n)
	}
	return text + fmt.Sprintf("\nVariables (names and types only; %d of %d namespace entries not listed, helpers included):\n%s",
		ns.Total-len(names), ns.Total, strings.Join(names, "\n"))
}
