package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResultFormat is how tool results are shaped for clients (docs/contract.md §3.4):
// per client by its clientInfo, or one form for every client.
type ResultFormat string

const (
	// FormatAuto gives the text form to the clients known to show their model only
	// one part of a result (textClient), and the structured form to every other.
	FormatAuto ResultFormat = "auto"
	// FormatText: no structuredContent and no outputSchema; the text block is
	// everything the model reads.
	FormatText ResultFormat = "text"
	// FormatStructured: structuredContent with every field of the contract, an
	// outputSchema per tool, and a text block beside them.
	FormatStructured ResultFormat = "structured"
)

// ParseResultFormat returns the format named s.
func ParseResultFormat(s string) (ResultFormat, error) {
	switch f := ResultFormat(s); f {
	case FormatAuto, FormatText, FormatStructured:
		return f, nil
	}
	return "", fmt.Errorf("invalid value %q for --result-format: auto, text or structured", s)
}

// textClient reports the clientInfo names of the clients that get the text form
// under FormatAuto. Each was measured (docs/design.md, "Known pitfalls";
// docs/contract.md §3.4): given structuredContent, Claude Code 2.1.332 hands its
// model only the JSON of it and drops the text, and checks it against outputSchema;
// Codex CLI 0.171.0 also hands over only that JSON, shows no error flag, drops images
// beside it, and types its code mode's return value from outputSchema. Gemini CLI
// 0.61.0 (gemini-cli-mcp-client) and opencode 1.18.33 (opencode) hand over the text
// blocks and drop structuredContent, except that Gemini CLI quotes an isError result
// whole as JSON (so it gets none: unflaggedClient), and opencode shows no error flag: with
// the structured form their models read no verdict, no run and no generation, and a
// long cell blocks past opencode's 60 s deadline. All four read text blocks as they
// are.
func textClient(name string) bool {
	switch name {
	case "claude-code", "codex-mcp-client", "gemini-cli-mcp-client", "opencode":
		return true
	}
	return false
}

// unflaggedClient is the clientInfo name of the client whose text-form results carry
// isError false even when they failed: Gemini CLI. Given an isError result, Gemini CLI
// 0.61.0 hands its model one line quoting the call's arguments (the cell's code) and
// the whole result as escaped JSON (an image's base64 included), and shows its user
// only "Error: MCP tool '<tool>' reported an error.", not the traceback; without the
// flag its model reads the text blocks and images as they are, and its user sees them.
// The text form says a failure by itself: an execution's footer opens with `failed`,
// any other tool's error with `Error:` (docs/contract.md §3.4).
const unflaggedClient = "gemini-cli-mcp-client"

// unflagged reports whether req's failed result goes to its client without isError:
// Gemini CLI's, in the text form.
func (s *Server) unflagged(req mcp.Request) bool {
	r, ok := req.(clientInfoRequest)
	if !ok || !s.formFor(req).text() {
		return false
	}
	info := r.ClientInfo()
	return info != nil && info.Name == unflaggedClient
}

// form is the shape of one client's results.
type form uint8

const (
	formStructured form = iota
	formText
	// formCode is the text form plus structuredContent, for a call Codex's code mode
	// makes (codeModeCall): its JavaScript gets the whole CallToolResult, and reads
	// values from structuredContent while the model reads the text it prints.
	formCode
)

// text says whether the form's content is the text form's.
func (f form) text() bool { return f != formStructured }

// codeModeCallPrefix starts the _meta.callId of every tool call Codex 0.171.0's code
// mode makes from the model's JavaScript (exec-<uuid>); a direct call's callId is the
// model's own function-call id.
const codeModeCallPrefix = "exec-"

// codeModeCall reports a call from Codex's code mode.
func codeModeCall(req mcp.Request) bool {
	call, ok := req.(*mcp.CallToolRequest)
	if !ok || call.Params == nil {
		return false
	}
	id, _ := call.Params.Meta["callId"].(string)
	return strings.HasPrefix(id, codeModeCallPrefix)
}

// clientInfoRequest is what go-sdk's server requests say about their client:
// clientInfo from the request's _meta under 2026-07-28, else from initialize.
type clientInfoRequest interface {
	ClientInfo() *mcp.Implementation
}

// formFor is the form of req's client.
func (s *Server) formFor(req mcp.Request) form {
	switch s.format {
	case FormatText:
		return formText
	case FormatStructured:
		return formStructured
	}
	if r, ok := req.(clientInfoRequest); ok {
		if info := r.ClientInfo(); info != nil && textClient(info.Name) {
			if info.Name == "codex-mcp-client" && codeModeCall(req) {
				return formCode
			}
			return formText
		}
	}
	return formStructured
}

// toolsForClient publishes no outputSchema to a text-form client: its results carry
// no structuredContent, Claude Code turns a result that does not match a published
// schema into an error, and Codex's code mode would declare the schema as the
// return type of a call whose value is text. It runs after toolOrder, so the order
// and the result's ttlMs and cacheScope stay as they are.
func (s *Server) toolsForClient(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*mcp.ListToolsResult)
		if !ok || err != nil || s.formFor(req) != formText {
			return res, err
		}
		// The slice is this reply's own, the tools go-sdk's definitions: replace
		// each by a copy.
		for i, t := range list.Tools {
			c := *t
			c.OutputSchema = nil
			list.Tools[i] = &c
		}
		return list, nil
	}
}
