package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/server/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tool is one MCP tool: its published definition and its handler.
type tool struct {
	name        string
	description string
	// output are the shapes of the tool's value, each a Go type (schema_out.go); its
	// input is its handler's params struct.
	output      []variant
	annotations *mcp.ToolAnnotations
	// routed tools resolve session_id (absent means the default session).
	routed bool
	// sessionRequired tools must name their session under stateless protocols.
	sessionRequired bool
	// handler receives the call's arguments decoded into the tool's params struct;
	// build it with handle.
	handler handler
}

// handler is a tool's typed handler with its params type hidden, so that one list
// can hold every tool.
type handler interface {
	paramsType() reflect.Type
	// serve runs the call; params points to a value of paramsType, and sess is the
	// routed session (nil for tools that are not routed).
	serve(ctx context.Context, sess *repl.Session, params any) (any, error)
}

// handle makes a tool's handler from a function of its params struct P. The function
// returns the tool's value, or an error: the error table (errors.go) decides whether
// it is a protocol error or a tool result with isError.
func handle[P any](f func(ctx context.Context, sess *repl.Session, p P) (any, error)) handler {
	return typedHandler[P](f)
}

type typedHandler[P any] func(context.Context, *repl.Session, P) (any, error)

func (typedHandler[P]) paramsType() reflect.Type { return reflect.TypeFor[P]() }

func (h typedHandler[P]) serve(ctx context.Context, sess *repl.Session, params any) (any, error) {
	return h(ctx, sess, *params.(*P))
}

// noParams is the params struct of a tool without arguments.
type noParams struct{}

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
		s.pythonSessionExportTool(),
		s.pythonSessionRestoreTool(),
		s.pythonExecuteFileTool(),
		s.artifactCreateTool(),
		s.artifactReadTool(),
		s.artifactSaveTool(),
		s.artifactDeleteTool(),
		s.artifactForwardTool(),
	}
}

// declared is a tool as its Go types declare it: its published definition, the
// properties its arguments are checked against and their binding to its params
// struct.
type declared struct {
	def   *mcp.Tool
	input inputSchema
	bind  *binding
}

// declare makes t's definition from its types: the input schema from its params
// struct, the output schema from its value's shapes.
func (t tool) declare() (*declared, error) {
	in, inSchema, err := inputOf(t.handler.paramsType())
	if err != nil {
		return nil, err
	}
	b, err := in.bind(t.handler.paramsType())
	if err != nil {
		return nil, err
	}
	outSchema, err := outputSchema(t.output)
	if err != nil {
		return nil, err
	}
	input, err := publish(inSchema)
	if err != nil {
		return nil, err
	}
	output, err := publish(outSchema)
	if err != nil {
		return nil, err
	}
	return &declared{input: in, bind: b, def: &mcp.Tool{
		Name:         t.name,
		Description:  t.description,
		InputSchema:  input,
		OutputSchema: output,
		Annotations:  t.annotations,
	}}, nil
}

// register adds t to the MCP server behind the generic checks of docs/contract.md §2.3:
// schema, session_id under stateless protocols, session routing. It panics when t's
// types do not make a schema its arguments can be checked against, a programming
// error that building any Server shows.
func (s *Server) register(t tool) {
	d, err := t.declare()
	if err != nil {
		panic(fmt.Sprintf("server: tool %s: %v", t.name, err))
	}
	s.mcp.AddTool(d.def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		value, sess, err := s.call(withCallRequest(ctx, req), t, d, req)
		if err != nil {
			if perr := protocolError(err); perr != nil {
				return nil, perr
			}
			value = failure(sess, err)
		}
		f := s.formFor(req)
		var kept *keptText
		if f.text() {
			kept = keepText(ctx, sess, value)
		}
		return present(f, value, kept), nil
	})
}

// call runs one call of t: its arguments decoded, its session resolved, its handler.
// sess is the routed session, for the identity fields of a failure.
func (s *Server) call(ctx context.Context, t tool, d *declared, req *mcp.CallToolRequest) (value any, sess *repl.Session, err error) {
	args, err := d.input.parse(req.Params.Arguments)
	if err != nil {
		return nil, nil, err
	}
	id, named := args["session_id"].(string)
	if t.sessionRequired && !named && statelessRequest(req) && sharedTransport(req) {
		return nil, nil, errNeedSessionID
	}
	if t.routed {
		if sess, err = s.repl.Session(id); err != nil {
			return nil, nil, unknownSessionError{s.repl.UnknownSession(id)}
		}
	}
	value, err = t.handler.serve(ctx, sess, d.bind.decode(d.input, args))
	return value, sess, err
}

// statelessRequest reports a request under protocol 2026-07-28 or later, where each
// request stands alone and there is no implicit default session.
func statelessRequest(req *mcp.CallToolRequest) bool {
	if v, ok := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok {
		return v >= transport.StatelessProtocol
	}
	if req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil {
			return p.ProtocolVersion >= transport.StatelessProtocol
		}
	}
	return false
}

// sharedTransport reports a request that came over HTTP, where any number of
// clients share the server's sessions, so a stateless request must say which one
// it means. Over stdio (and in process) there is exactly one client, and the
// default session is its own under every protocol version (docs/contract.md §2.3).
// go-sdk gives every HTTP request's handler the request's headers, and no other.
func sharedTransport(req *mcp.CallToolRequest) bool {
	return req.Extra != nil && req.Extra.Header != nil
}

func annotations(readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{
		ReadOnlyHint:    readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  idempotent,
		OpenWorldHint:   &openWorld,
	}
}

// identity is the fields that say which state a routed tool's result is about
// (docs/contract.md §2.3, "identify").
type identity struct {
	ServerID   string `json:"server_id"`
	SessionID  string `json:"session_id"`
	Generation uint64 `json:"generation"`
}

// identify is sess's identity now.
func identify(sess *repl.Session) identity {
	h := sess.Health()
	return identity{ServerID: h.ServerID, SessionID: h.SessionID, Generation: h.Generation}
}

// failure is the value of a failed call: {"error": message}, with the fields of a
// fieldsError and, for a routed tool, the session's identity.
func failure(sess *repl.Session, err error) failed {
	value := map[string]any{"error": err.Error()}
	if fe := (*fieldsError)(nil); errors.As(err, &fe) {
		for k, v := range fe.fields {
			value[k] = v
		}
	}
	if sess != nil {
		id := identify(sess)
		value["server_id"], value["session_id"], value["generation"] = id.ServerID, id.SessionID, id.Generation
	}
	return failed(value)
}

// toolFailure is the shape of failure's value, for the output schemas: the fields of
// a fieldsError are the shape of the tool that adds them (cancelRefused).
type toolFailure struct {
	Error      string `json:"error"`
	ServerID   string `json:"server_id,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
}

// failed is a tool failure's value; present marks it isError.
type failed map[string]any

// modelText is the failure's message.
func (f failed) modelText() reply {
	msg, _ := f["error"].(string)
	return reply{body: "Error: " + msg}
}
