package server

import (
	"context"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tool is one MCP tool: its published definition and its handler.
type tool struct {
	name        string
	description string
	input       inputSchema
	output      string // JSON Schema of structuredContent
	annotations *mcp.ToolAnnotations
	// routed tools resolve session_id (absent means the default session).
	routed bool
	// sessionRequired tools must name their session under stateless protocols.
	sessionRequired bool
	handle          func(ctx context.Context, call *toolCall) any
}

// toolCall is one validated call.
type toolCall struct {
	args    map[string]json.RawMessage
	session *repl.Session
}

// tools is the tool list, in the order clients see it.
func (s *Server) tools() []tool {
	return []tool{
		s.executePythonTool(),
		s.pythonStartTool(),
		s.pythonHealthTool(),
		s.pythonRunTool(),
		s.pythonCancelTool(),
		s.pythonSessionOpenTool(),
		s.pythonSessionCloseTool(),
		s.pythonSessionListTool(),
		s.pythonSessionInspectTool(),
		s.pythonExecuteFileTool(),
		s.artifactCreateTool(),
		s.artifactReadTool(),
		s.artifactSaveTool(),
		s.artifactDeleteTool(),
		s.artifactForwardTool(),
	}
}

// register adds t to the MCP server behind the generic checks of reference 2.3:
// schema, session_id under stateless protocols, session routing.
func (s *Server) register(t tool) {
	def := &mcp.Tool{
		Name:         t.name,
		Description:  t.description,
		InputSchema:  t.input.jsonSchema(),
		OutputSchema: json.RawMessage(t.output),
		Annotations:  t.annotations,
	}
	s.mcp.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := t.input.validate(req.Params.Arguments)
		if err != nil {
			return nil, invalidParams(err.Error())
		}
		_, named := args["session_id"]
		if t.sessionRequired && !named && statelessRequest(req) {
			return nil, invalidParams(msgNeedSessionID)
		}
		call := &toolCall{args: args}
		if t.routed {
			var id string
			if named {
				json.Unmarshal(args["session_id"], &id)
			}
			if call.session, err = s.repl.Session(id); err != nil {
				return nil, invalidParams(msgSessionUnknown)
			}
		}
		return present(t.handle(ctx, call)), nil
	})
}

// statelessRequest reports a request under protocol 2026-07-28 or later, where each
// request stands alone and there is no implicit default session.
func statelessRequest(req *mcp.CallToolRequest) bool {
	if v, ok := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok {
		return v >= statelessProtocol
	}
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil {
			return p.ProtocolVersion >= statelessProtocol
		}
	}
	return false
}

const statelessProtocol = "2026-07-28"

func annotations(readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{
		ReadOnlyHint:    readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  idempotent,
		OpenWorldHint:   &openWorld,
	}
}

// identified adds the session's identity fields to a tool value that lacks them.
func identified(sess *repl.Session, value map[string]any) map[string]any {
	h := sess.Health()
	for k, v := range map[string]any{"server_id": h.ServerID, "session_id": h.SessionID, "generation": h.Generation} {
		if _, ok := value[k]; !ok {
			value[k] = v
		}
	}
	return value
}
