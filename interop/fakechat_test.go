package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// chatAPI is a fake OpenAI Chat Completions API for opencode, reached through an
// OpenAI-compatible provider's baseURL: it follows its fakeModel's script, one
// tool call per turn, and records the tool messages opencode sends back, which are
// exactly what a model reads.
//
// opencode 1.18.33 calls POST /v1/chat/completions with stream: true and reads SSE
// data lines of chat.completion.chunk, then [DONE]. Besides the scripted
// conversation it asks, once, for a title (a request without tools, whose system
// message says it generates titles): answered with one, and counted as handled.
// Anything else is refused with 404 and recorded as unexpected.
type chatAPI struct{ m *fakeModel }

// chatCallID is the tool call id of a step; chatStepOf reads it back.
func chatCallID(stepID string) string { return "call_mv_" + stepID }

func chatStepOf(id string) (string, bool) { return strings.CutPrefix(id, "call_mv_") }

// opencodeToolName is how opencode names an MCP server's tool: SERVER_TOOL, with
// characters outside [A-Za-z0-9_-] replaced by underscores.
func opencodeToolName(server, tool string) string {
	return opencodeNameChars.ReplaceAllString(server+"_"+tool, "_")
}

var opencodeNameChars = regexp.MustCompile(`[^A-Za-z0-9_\-]`)

// chatMediaNote opens the user message in which opencode passes on the images of
// the tool results before it, for a model whose modalities include images.
const chatMediaNote = "Attached media from tool result:"

// chatTitleRequest is opencode's title generator's system prompt.
const chatTitleRequest = "You are a title generator"

// chatMessage is one message of a request, of any role.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// chatPart is one part of a message's content given as an array.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// chatParts decodes a content field: a string is one text part, null none.
func chatParts(raw json.RawMessage) ([]chatPart, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return []chatPart{{Type: "text", Text: s}}, err
	}
	var parts []chatPart
	err := json.Unmarshal(raw, &parts)
	return parts, err
}

func (o chatAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
		o.completions(w, r)
		return
	}
	o.refuse(w, r, "no such endpoint in the fake Chat Completions API")
}

func (o chatAPI) refuse(w http.ResponseWriter, r *http.Request, why string) {
	o.m.unexpectedf("%s %s: %s", r.Method, r.URL.RequestURI(), why)
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"type": "invalid_request_error", "message": "repl-mcp model-view fake: unexpected request " + r.Method + " " + r.URL.Path + ": " + why,
	}})
}

func (o chatAPI) completions(w http.ResponseWriter, r *http.Request) {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		o.refuse(w, r, "a request body with Content-Encoding "+enc+", which the fake does not decode")
		return
	}
	var req struct {
		Model    string        `json:"model"`
		Stream   bool          `json:"stream"`
		Messages []chatMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAPIBody)).Decode(&req); err != nil {
		o.refuse(w, r, "undecodable body: "+err.Error())
		return
	}
	scripted, title := false, false
	for _, msg := range req.Messages {
		parts, _ := chatParts(msg.Content)
		for _, p := range parts {
			scripted = scripted || msg.Role == "user" && strings.Contains(p.Text, o.m.prompt)
			title = title || msg.Role == "system" && strings.HasPrefix(p.Text, chatTitleRequest)
		}
	}
	if title && len(req.Tools) == 0 {
		o.m.handledf("POST %s: the session's title", r.URL.Path)
		o.answer(w, req.Model, map[string]any{"role": "assistant", "content": "repl-mcp model view"}, "stop")
		return
	}
	if !scripted {
		o.refuse(w, r, fmt.Sprintf("a request outside the scripted conversation (model %q, %d messages, %d tools)", req.Model, len(req.Messages), len(req.Tools)))
		return
	}
	if !req.Stream {
		o.refuse(w, r, "the scripted conversation without stream: true")
		return
	}
	o.m.countRequest()
	offered := map[string]bool{}
	for _, t := range req.Tools {
		offered[t.Function.Name] = true
	}

	calls := map[string]string{} // tool call id → its arguments
	names := map[string]string{}
	done := map[string]bool{}
	for i, msg := range req.Messages {
		for _, c := range msg.ToolCalls {
			calls[c.ID], names[c.ID] = c.Function.Arguments, c.Function.Name
		}
		if msg.Role != "tool" {
			continue
		}
		id, ok := chatStepOf(msg.ToolCallID)
		args, called := calls[msg.ToolCallID]
		if !ok || o.m.stepByID(id) == nil || !called {
			o.m.problemf("a tool message for %q, which the script never called", msg.ToolCallID)
			continue
		}
		done[id] = true
		g := &given{Step: id, Tool: names[msg.ToolCallID], Raw: append(json.RawMessage(nil), msg.Content...)}
		if err := json.Unmarshal([]byte(args), &g.Args); err != nil {
			o.m.problemf("step %s: the tool call's arguments came back undecodable: %v", id, err)
		}
		o.read(g, msg.Content, req.Messages[i+1:])
		o.m.record(g)
	}

	st, args := o.m.next(done)
	switch {
	case st == nil:
		o.answer(w, req.Model, map[string]any{"role": "assistant", "content": "The script is done."}, "stop")
	case !offered[opencodeToolName(st.server, st.tool)]:
		o.m.problemf("step %s: opencode offers no tool %s; the script ends here", st.id, opencodeToolName(st.server, st.tool))
		o.answer(w, req.Model, map[string]any{"role": "assistant", "content": "The tool was not offered."}, "stop")
	default:
		input, _ := json.Marshal(args)
		o.answer(w, req.Model, map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
			"index": 0, "id": chatCallID(st.id), "type": "function",
			"function": map[string]any{"name": opencodeToolName(st.server, st.tool), "arguments": string(input)},
		}}}, "tool_calls")
	}
}

// read fills g from a tool message's content, and from the user message opencode
// adds after the tool messages to carry what a tool message cannot (images).
func (o chatAPI) read(g *given, content json.RawMessage, after []chatMessage) {
	parts, err := chatParts(content)
	if err != nil {
		o.m.problemf("step %s: undecodable tool message content: %v", g.Step, err)
	}
	for _, p := range parts {
		o.readPart(g, p)
	}
	for _, msg := range after {
		if msg.Role == "tool" {
			continue
		}
		if msg.Role != "user" {
			break
		}
		extra, _ := chatParts(msg.Content)
		for _, p := range extra {
			switch {
			case p.Type == "image_url":
				o.readPart(g, p)
			case p.Type == "text" && p.Text == chatMediaNote:
				g.Envelope = append(g.Envelope, p.Text)
			}
		}
		break
	}
}

func (o chatAPI) readPart(g *given, p chatPart) {
	switch p.Type {
	case "text":
		g.Texts = append(g.Texts, p.Text)
	case "image_url":
		if p.ImageURL == nil {
			o.m.problemf("step %s: an image_url part without its url", g.Step)
			return
		}
		mediaType, data, ok := dataURL(p.ImageURL.URL)
		if !ok {
			o.m.problemf("step %s: an image_url that is not a base64 data URL (%.60q)", g.Step, p.ImageURL.URL)
			return
		}
		g.addImage(mediaType, data)
	default:
		o.m.problemf("step %s: a content part of type %q the fake does not read", g.Step, p.Type)
	}
}

// answer streams one assistant message as chat.completion.chunk events.
func (o chatAPI) answer(w http.ResponseWriter, model string, delta map[string]any, finish string) {
	created := time.Now().Unix()
	chunk := func(choice map[string]any, usage any) map[string]any {
		c := map[string]any{"id": "chatcmpl-mv", "object": "chat.completion.chunk", "created": created, "model": model, "choices": []any{choice}}
		if usage != nil {
			c["usage"] = usage
		}
		return c
	}
	s := newSSE(w)
	s.data(chunk(map[string]any{"index": 0, "delta": delta, "finish_reason": nil}, nil))
	s.data(chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish},
		map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}))
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	if s.f != nil {
		s.f.Flush()
	}
}
