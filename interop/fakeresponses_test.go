package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// responsesAPI is a fake OpenAI Responses API for Codex (wire_api = "responses"): it
// follows its fakeModel's script, one function_call per turn, and records the
// function_call_output items Codex sends back, which are exactly what a model reads.
//
// Codex 0.171.0 defers MCP tools behind its tool_search tool for models that support
// it (gpt-5.5 does), so the fake first calls tool_search, as a real model must, and
// then calls each tool by the namespace and name the search returned. Codex calls POST
// /v1/responses with stream: true and reads the SSE events response.created,
// response.output_item.done and response.completed; anything else is refused with 404
// and recorded as unexpected.
type responsesAPI struct{ m *fakeModel }

func codexCallID(stepID string) string { return "call_mv_" + stepID }

func codexStepOf(callID string) (string, bool) { return strings.CutPrefix(callID, "call_mv_") }

// codexSearchCallID names the tool_search call made before a step whose tool was not
// loaded yet.
func codexSearchCallID(stepID string) string { return "ts_mv_" + stepID }

// codexEnvelope is what Codex puts before every MCP tool result it gives its model.
var codexEnvelope = regexp.MustCompile(`^Wall time: [0-9.]+ seconds\nOutput:\n?`)

// codexNameChars are the characters Codex keeps in a tool's name; it replaces others
// (server-everything's hyphens) by underscores.
var codexNameChars = regexp.MustCompile(`[^A-Za-z0-9_]`)

func (o responsesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/responses" {
		o.responses(w, r)
		return
	}
	o.refuse(w, r, "no such endpoint in the fake Responses API")
}

func (o responsesAPI) refuse(w http.ResponseWriter, r *http.Request, why string) {
	o.m.unexpectedf("%s %s: %s", r.Method, r.URL.RequestURI(), why)
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"type": "invalid_request_error", "message": "repl-mcp model-view fake: unexpected request " + r.Method + " " + r.URL.Path + ": " + why,
	}})
}

// responsesItem is one input item of a Responses request, of any type the fake reads.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"` // a JSON string for function_call, an object for tool_search_call
	Output    json.RawMessage `json:"output"`
	Tools     []responsesTool `json:"tools"`
}

// responsesTool is a tool as Codex offers it: a function, or a namespace of them.
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

// responsesPart is one part of a message's content or of a function_call_output.
type responsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
}

func (o responsesAPI) responses(w http.ResponseWriter, r *http.Request) {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		o.refuse(w, r, "a request body with Content-Encoding "+enc+", which the fake does not decode")
		return
	}
	var req struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Input  []responsesItem `json:"input"`
		Tools  []responsesTool `json:"tools"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAPIBody)).Decode(&req); err != nil {
		o.refuse(w, r, "undecodable body: "+err.Error())
		return
	}
	scripted := false
	calls := map[string]responsesItem{}
	searched := map[string]bool{} // steps whose tool_search has its output
	offered := append([]responsesTool(nil), req.Tools...)
	var outputs []responsesItem
	for _, it := range req.Input {
		switch it.Type {
		case "message":
			if it.Role == "user" && strings.Contains(string(it.Content), jsonFragment(o.m.prompt)) {
				scripted = true
			}
		case "function_call":
			calls[it.CallID] = it
		case "function_call_output":
			outputs = append(outputs, it)
		case "tool_search_output":
			offered = append(offered, it.Tools...)
			if id, ok := strings.CutPrefix(it.CallID, "ts_mv_"); ok {
				searched[id] = true
			}
		}
	}
	if !scripted {
		o.refuse(w, r, fmt.Sprintf("a Responses request outside the scripted conversation (model %q, %d input items)", req.Model, len(req.Input)))
		return
	}
	if !req.Stream {
		o.refuse(w, r, "the scripted conversation without stream: true")
		return
	}
	if o.m.countRequest() == 1 {
		// Code mode's entry point: there the model writes JavaScript that calls the
		// tools and reads only what the script prints, not the tools' results.
		for _, t := range req.Tools {
			if t.Name == "exec" {
				o.m.problemf("Codex offers code mode's exec tool (%s): the test needs direct function calls, with features.code_mode off", t.Type)
			}
		}
	}

	done := map[string]bool{}
	for _, out := range outputs {
		id, ok := codexStepOf(out.CallID)
		st := o.m.stepByID(id)
		call, called := calls[out.CallID]
		if !ok || st == nil || !called {
			o.m.problemf("a function_call_output for %q, which the script never called", out.CallID)
			continue
		}
		done[id] = true
		g := &given{Step: id, Tool: strings.Trim(call.Namespace+"."+call.Name, "."), Raw: append(json.RawMessage(nil), out.Output...)}
		var args string
		err := json.Unmarshal(call.Arguments, &args)
		if err == nil {
			err = json.Unmarshal([]byte(args), &g.Args)
		}
		if err != nil {
			o.m.problemf("step %s: the function_call arguments came back undecodable: %v", id, err)
		}
		o.readOutput(g, out.Output)
		o.m.record(g)
	}

	st, args := o.m.next(done)
	var item map[string]any
	switch {
	case st == nil:
		item = map[string]any{"type": "message", "id": "msg_mv_done", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "The script is done.", "annotations": []any{}}}}
	default:
		ns, name, ok := callable(offered, st.server, st.tool)
		switch {
		case ok:
			input, _ := json.Marshal(args)
			item = map[string]any{"type": "function_call", "id": "fc_mv_" + st.id, "call_id": codexCallID(st.id), "name": name, "arguments": string(input)}
			if ns != "" {
				item["namespace"] = ns
			}
		case !searched[st.id]:
			item = map[string]any{"type": "tool_search_call", "id": codexSearchCallID(st.id), "call_id": codexSearchCallID(st.id),
				"status": "completed", "execution": "client", "arguments": map[string]any{"query": st.tool + " " + st.server, "limit": searchLimit}}
		default:
			o.m.problemf("step %s: Codex offers no tool %s of server %s, neither directly nor after tool_search (offered: %s); the script ends here", st.id, st.tool, st.server, offeredNames(offered))
			item = map[string]any{"type": "message", "id": "msg_mv_stuck", "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": "The tool was not offered.", "annotations": []any{}}}}
		}
	}
	id := fmt.Sprintf("resp_mv_%d", len(done))
	sse := newSSE(w)
	sse.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}

// readOutput fills g from a function_call_output's output: a string, or a list of
// input_text and input_image parts.
func (o responsesAPI) readOutput(g *given, raw json.RawMessage) {
	var parts []responsesPart
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '"' {
		var s string
		if err := json.Unmarshal(trimmed, &s); err != nil {
			o.m.problemf("step %s: undecodable output: %v", g.Step, err)
		}
		parts = []responsesPart{{Type: "input_text", Text: s}}
	} else if err := json.Unmarshal(raw, &parts); err != nil {
		o.m.problemf("step %s: undecodable output: %v", g.Step, err)
	}
	for i, p := range parts {
		switch p.Type {
		case "input_text", "output_text":
			text := p.Text
			if i == 0 {
				if env := codexEnvelope.FindString(text); env != "" {
					g.Envelope = append(g.Envelope, env)
					text = text[len(env):]
					if text == "" {
						continue // the envelope was a part of its own
					}
				}
			}
			g.Texts = append(g.Texts, text)
		case "input_image":
			mediaType, data, ok := dataURL(p.ImageURL)
			if !ok {
				o.m.problemf("step %s: an input_image that is not a base64 data URL (%.60q)", g.Step, p.ImageURL)
				continue
			}
			g.addImage(mediaType, data)
		default:
			o.m.problemf("step %s: an output part of type %q the fake does not read", g.Step, p.Type)
		}
	}
}

// callable finds how Codex offers a server's tool: as a function in the namespace
// mcp__SERVER (how 0.171.0 does it) or as the function mcp__SERVER__TOOL.
func callable(tools []responsesTool, server, tool string) (namespace, name string, ok bool) {
	name = codexNameChars.ReplaceAllString(tool, "_")
	ns := "mcp__" + codexNameChars.ReplaceAllString(server, "_")
	for _, t := range tools {
		switch {
		case t.Type == "namespace" && t.Name == ns:
			for _, f := range t.Tools {
				if f.Name == name {
					return ns, name, true
				}
			}
		case t.Type == "function" && t.Name == ns+"__"+name:
			return "", t.Name, true
		}
	}
	return "", "", false
}

// searchLimit is how many tools a tool_search asks for: every tool of two servers
// with the same fifteen tools (repl and longrepl), so that the one asked for is among
// them however the search ranks tools whose names and descriptions are the same.
const searchLimit = 32

// offeredNames lists the tools offered, namespaces with their functions, for a failure.
func offeredNames(tools []responsesTool) string {
	var names []string
	for _, t := range tools {
		name := t.Name
		if t.Type == "namespace" {
			var fs []string
			for _, f := range t.Tools {
				fs = append(fs, f.Name)
			}
			name += "{" + strings.Join(fs, " ") + "}"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// dataURL splits data:MEDIA;base64,DATA.
func dataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, ok = strings.CutSuffix(meta, ";base64")
	return mediaType, data, ok
}

// jsonFragment is s as it appears inside a JSON string, for finding a prompt in raw
// content.
func jsonFragment(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
