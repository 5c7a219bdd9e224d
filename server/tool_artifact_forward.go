package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/internal/ids"
	"github.com/iota-uz/repl-mcp/repl"
)

var errForwardCancelled = errors.New("Forwarding cancelled; external effects may already have occurred; inspect the broker journal")

type artifactForwardParams struct {
	SessionID sessionArg                 `json:"session_id"`
	ID        artifactIDArg              `json:"id"`
	Server    string                     `json:"server" schema:"minLength=1,maxLength=200" jsonschema:"A server of the session's broker registry."`
	Tool      string                     `json:"tool" schema:"minLength=1,maxLength=400" jsonschema:"The tool to call."`
	Argument  string                     `json:"argument" schema:"minLength=1,maxLength=400" jsonschema:"The tool argument that receives the artifact."`
	Format    string                     `json:"format,omitempty" schema:"enum=json|text|base64,default=json" jsonschema:"json, text or base64."`
	Arguments map[string]json.RawMessage `json:"arguments,omitempty" jsonschema:"Other arguments of the tool."`
}

// forwarded is artifact_forward's answer: the downstream result envelope, with the
// session's identity fields added (artifactForward writes it as encodedResult).
type forwarded struct {
	Content           []any          `json:"content"`
	StructuredContent any            `json:"structuredContent,omitempty" jsonschema:"the downstream result's structuredContent, any JSON"`
	IsError           bool           `json:"isError,omitempty"`
	Meta              map[string]any `json:"_meta,omitempty"`
	identity
}

func (s *Server) artifactForwardTool() tool {
	return tool{
		name: "artifact_forward",
		description: "Pass an artifact (at most 512 KiB) as one argument of a tool of another MCP server, through the " +
			"session's broker, without the content entering the conversation: format json (the parsed value), text " +
			"(a string) or base64. The broker's allowlist, schema check and journal apply; nothing is retried. " +
			"Returns the downstream result envelope.",
		output:          []variant{shape[forwarded](), shape[toolFailure]()},
		annotations:     annotations(false, true, false, true),
		routed:          true,
		sessionRequired: true,
		handler:         handle(s.artifactForward),
	}
}

// artifactForward places the artifact as one argument of a downstream call and
// answers with the downstream envelope, whose own isError becomes the result's.
func (s *Server) artifactForward(ctx context.Context, sess *repl.Session, p artifactForwardParams) (any, error) {
	out, err := s.forward(ctx, sess, p)
	if ctx.Err() != nil {
		return nil, errForwardCancelled
	}
	if err != nil {
		return nil, err
	}
	var envelope struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(out, &envelope); err != nil {
		return nil, fmt.Errorf("the downstream result is not a result envelope: %w", err)
	}
	// The envelope carries up to 512 KiB of content: add the identity fields to
	// the encoded object rather than decoding and encoding it again.
	id := identify(sess)
	out = withField(out, "server_id", id.ServerID)
	out = withField(out, "session_id", id.SessionID)
	out = withField(out, "generation", id.Generation)
	return encodedResult{JSON: out, IsError: envelope.IsError}, nil
}

func (s *Server) forward(ctx context.Context, sess *repl.Session, p artifactForwardParams) (json.RawMessage, error) {
	store, err := s.store()
	if err != nil {
		return nil, err
	}
	req := artifacts.ForwardRequest{ID: string(p.ID), Format: p.Format, Argument: p.Argument, Arguments: p.Arguments}
	return store.Forward(ctx, sess.ID(), req, func(ctx context.Context, arguments json.RawMessage) (json.RawMessage, error) {
		// Each forward is its own run in the broker's journal.
		return s.brokerCall(ctx, sess, ids.UUID(), p.Server, p.Tool, arguments)
	})
}

// modelText is the downstream result's text (envelopeText).
func (e encodedResult) modelText() reply { return envelopeText(e) }

// envelopeText is a forwarded call's downstream result: its text blocks, a note
// for each other block, or its structuredContent's JSON when it has no content.
func envelopeText(e encodedResult) reply {
	var env struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			MIMEType string `json:"mimeType"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(e.JSON, &env); err != nil {
		return reply{body: string(e.JSON)}
	}
	var b strings.Builder
	for _, c := range env.Content {
		newLine(&b)
		if c.Type == "text" {
			b.WriteString(c.Text)
		} else {
			fmt.Fprintf(&b, "[%s content %s]", c.Type, c.MIMEType)
		}
	}
	if b.Len() == 0 && len(env.StructuredContent) > 0 {
		b.Write(env.StructuredContent)
	}
	status := "[forwarded; the downstream tool succeeded]"
	if e.IsError {
		status = "[forwarded; the downstream tool failed]"
	}
	return withFooter(b.String(), status)
}
