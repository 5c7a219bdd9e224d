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

// maxAPIBody bounds a request body a fake model API reads: the whole conversation,
// every earlier tool result included, comes with each request.
const maxAPIBody = 32 << 20

// anthropicAPI is a fake Anthropic Messages API for Claude Code: it follows its
// fakeModel's script, one tool_use per turn, and records the tool_result blocks Claude
// Code sends back, which are exactly what a model reads.
//
// Claude Code calls POST /v1/messages?beta=true with stream: true and reads the SSE
// event sequence message_start, content_block_start, content_block_delta,
// content_block_stop, message_delta, message_stop. Token counting is answered too;
// anything else is refused with 404 and recorded as unexpected.
type anthropicAPI struct{ m *fakeModel }

// claudeSearchID names the ToolSearch call made before a step whose tool is not loaded.
func claudeSearchID(stepID string) string { return "toolu_mvsearch_" + stepID }

// claudeToolUseID is the tool_use id of a step; claudeStepOf reads it back.
func claudeToolUseID(stepID string) string { return "toolu_mv_" + stepID }

func claudeStepOf(toolUseID string) (string, bool) { return strings.CutPrefix(toolUseID, "toolu_mv_") }

// claudeToolName is how Claude Code names an MCP server's tool.
func claudeToolName(server, tool string) string { return "mcp__" + server + "__" + tool }

func (a anthropicAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		a.messages(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		io.Copy(io.Discard, io.LimitReader(r.Body, maxAPIBody))
		a.m.handledf("POST %s", r.URL.Path)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 1})
	default:
		a.refuse(w, r, "no such endpoint in the fake Messages API")
	}
}

func (a anthropicAPI) refuse(w http.ResponseWriter, r *http.Request, why string) {
	a.m.unexpectedf("%s %s: %s", r.Method, r.URL.RequestURI(), why)
	writeJSON(w, http.StatusNotFound, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": "not_found_error", "message": "repl-mcp model-view fake: unexpected request " + r.Method + " " + r.URL.Path + ": " + why},
	})
}

// anthropicBlock is one content block of a message, of any type the fake reads.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   *bool           `json:"is_error"`
	Content   json.RawMessage `json:"content"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// anthropicBlocks decodes a content field: a string is one text block.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '"' {
		var s string
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	err := json.Unmarshal(raw, &blocks)
	return blocks, err
}

func (a anthropicAPI) messages(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAPIBody))
	if err == nil {
		a.m.observe(body)
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		a.refuse(w, r, "undecodable body: "+err.Error())
		return
	}
	// The scripted conversation opens with the test's prompt; any other request (a
	// title, a summary, a side query) is not what the test drives.
	scripted, turn := false, 0
	calls := map[string]anthropicBlock{} // tool_use id → the call
	var results []anthropicBlock
	for i, msg := range req.Messages {
		blocks, err := anthropicBlocks(msg.Content)
		if err != nil {
			a.refuse(w, r, fmt.Sprintf("message %d (%s) has undecodable content: %v", i, msg.Role, err))
			return
		}
		for _, b := range blocks {
			switch {
			case msg.Role == "user" && b.Type == "text" && strings.Contains(b.Text, a.m.prompt):
				scripted = true
			case msg.Role == "user" && b.Type == "text" && a.m.later != "" && strings.Contains(b.Text, a.m.later):
				turn = 1 // a continued conversation's later prompt
			case msg.Role == "assistant" && b.Type == "tool_use":
				calls[b.ID] = b
			case msg.Role == "user" && b.Type == "tool_result":
				results = append(results, b)
			}
		}
	}
	if !scripted {
		a.refuse(w, r, fmt.Sprintf("a Messages request outside the scripted conversation (model %q, %d messages)", req.Model, len(req.Messages)))
		return
	}
	if !req.Stream {
		a.refuse(w, r, "the scripted conversation without stream: true")
		return
	}
	a.m.countRequest()

	offered := map[string]bool{}
	for _, tool := range req.Tools {
		offered[tool.Name] = true
	}
	done := map[string]bool{}
	searched := map[string]bool{} // steps whose ToolSearch has its result
	delivered := taskNotifications(req.Messages)
	pending := "" // a step whose call went to the background and has not come back
	for _, res := range results {
		if id, ok := strings.CutPrefix(res.ToolUseID, "toolu_mvsearch_"); ok {
			searched[id] = true
			continue
		}
		if strings.HasPrefix(res.ToolUseID, claudeKeepAlivePrefix) {
			continue
		}
		id, ok := claudeStepOf(res.ToolUseID)
		st := a.m.stepByID(id)
		call, called := calls[res.ToolUseID]
		if !ok || st == nil || !called {
			a.m.problemf("a tool_result for %q, which the script never called", res.ToolUseID)
			continue
		}
		g := &given{Step: id, Tool: call.Name, IsError: res.IsError, Raw: append(json.RawMessage(nil), res.Content...)}
		if err := json.Unmarshal(call.Input, &g.Args); err != nil {
			a.m.problemf("step %s: the tool_use input came back undecodable: %v", id, err)
		}
		blocks, err := anthropicBlocks(res.Content)
		if err != nil {
			a.m.problemf("step %s: undecodable tool_result content: %v", id, err)
		}
		for _, b := range blocks {
			switch {
			case b.Type == "text" && strings.HasPrefix(b.Text, "[Image: source: "):
				g.Envelope = append(g.Envelope, b.Text) // Claude Code's note of where it saved an image
			case b.Type == "text":
				g.Texts = append(g.Texts, b.Text)
			case b.Type == "image" && b.Source != nil && b.Source.Type == "base64":
				g.addImage(b.Source.MediaType, b.Source.Data)
			default:
				a.m.problemf("step %s: a tool_result block of type %q the fake does not read", id, b.Type)
			}
		}
		if m := claudeBackgroundNotice.FindStringSubmatch(g.Text()); m != nil {
			// Moved to the background: what the model reads of the call is what the
			// task's notification delivers, once it has.
			result, ok := delivered[m[1]]
			if !ok {
				pending = id
				continue
			}
			g.Background, g.Texts, g.Images = g.Text(), []string{result}, nil
		}
		done[id] = true
		a.m.record(g)
	}

	var st *step
	var args map[string]any
	if pending != "" {
		// Claude Code ends a print-mode session, and stops its background tasks,
		// once the model answers without a tool call; a model waiting for a task
		// keeps going meanwhile, here with a ToolSearch that changes nothing.
		if n := a.m.countKeepAlive(); n > claudeKeepAliveLimit {
			a.m.problemf("step %s: its background task never delivered its result", pending)
		} else {
			time.Sleep(claudeKeepAlivePause)
			a.keepAlive(w, req.Model, n)
			return
		}
	} else {
		a.m.enterTurn(turn)
		st, args = a.m.next(done)
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_mv_%d", len(done)), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1},
	}})
	stop := "end_turn"
	if st != nil {
		stop = "tool_use"
		id, name := claudeToolUseID(st.id), claudeToolName(st.server, st.tool)
		// Claude Code defers MCP tools: their schemas reach the model only through
		// ToolSearch, and a call made without it gets a note appended to its result
		// ("This tool's input schema was not in your prompt ..."). So the fake loads
		// each tool first, as a real model does.
		if !offered[name] {
			if searched[st.id] {
				a.m.problemf("step %s: Claude Code still offers no %s after ToolSearch loaded it", st.id, name)
			} else if offered["ToolSearch"] {
				args = map[string]any{"query": "select:" + name, "max_results": 5}
				id, name = claudeSearchID(st.id), "ToolSearch"
			}
		}
		input, _ := json.Marshal(args)
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": id, "name": name, "input": map[string]any{},
		}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": string(input),
		}})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "The script is done."}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// Background tasks (CLAUDE_AUTO_BACKGROUND_TASKS=1, measured with 2.1.332): a call
// still running after CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS gets Claude Code's notice as
// its tool_result, and the result comes later in a <task-notification>: a user turn of
// its own when the model had ended its turn, a system message in the conversation
// when it was still at work.
var (
	claudeBackgroundNotice = regexp.MustCompile(`moved to the background as task (\w+)`)
	claudeTaskNotification = regexp.MustCompile(`(?s)<task-notification>\s*<task-id>(\w+)</task-id>.*?<result>\n?(.*?)\n?</result>`)
)

const (
	claudeKeepAlivePrefix = "toolu_mvkeep_"
	claudeKeepAliveLimit  = 200
	claudeKeepAlivePause  = 250 * time.Millisecond
)

// taskNotifications are the results the conversation's task notifications delivered,
// by task id, in messages of any role.
func taskNotifications(messages []struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}) map[string]string {
	out := map[string]string{}
	for _, msg := range messages {
		blocks, _ := anthropicBlocks(msg.Content)
		for _, b := range blocks {
			for _, m := range claudeTaskNotification.FindAllStringSubmatch(b.Text, -1) {
				out[m[1]] = m[2]
			}
		}
	}
	return out
}

// keepAlive answers with a ToolSearch call that loads nothing new.
func (a anthropicAPI) keepAlive(w http.ResponseWriter, model string, n int) {
	id := fmt.Sprintf("%s%d", claudeKeepAlivePrefix, n)
	input, _ := json.Marshal(map[string]any{"query": "select:ToolSearch", "max_results": 1})
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_" + id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1},
	}})
	sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
		"type": "tool_use", "id": id, "name": "ToolSearch", "input": map[string]any{},
	}})
	sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{
		"type": "input_json_delta", "partial_json": string(input),
	}})
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// sse writes server-sent events, each flushed at once.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // the fake's own values always encode
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	if s.f != nil {
		s.f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
