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

// geminiAPI is a fake Gemini API (generativelanguage v1beta) for Gemini CLI: it
// follows its fakeModel's script, one functionCall per turn, and records the
// functionResponse parts Gemini CLI sends back, which are exactly what a model reads.
//
// Gemini CLI 0.61.0 (GOOGLE_GEMINI_BASE_URL, an API key, and a model named on the
// command line, so that no routing classifier runs) calls POST
// /v1beta/models/MODEL:streamGenerateContent?alt=sse with the conversation in
// contents and every tool in tools[].functionDeclarations, and reads SSE data lines,
// each a GenerateContentResponse. A functionCall's id comes back in its
// functionResponse. Anything else is refused with 404 and recorded as unexpected.
type geminiAPI struct{ m *fakeModel }

// geminiCallID is the functionCall id of a step; geminiStepOf reads it back.
func geminiCallID(stepID string) string { return "gmv_" + stepID }

func geminiStepOf(id string) (string, bool) { return strings.CutPrefix(id, "gmv_") }

// geminiToolName is how Gemini CLI names an MCP server's tool: mcp_SERVER_TOOL, with
// characters outside [A-Za-z0-9_.:-] replaced by underscores.
func geminiToolName(server, tool string) string {
	return geminiNameChars.ReplaceAllString("mcp_"+server+"_"+tool, "_")
}

var geminiNameChars = regexp.MustCompile(`[^A-Za-z0-9_.:\-]`)

// geminiPath is a model method's path.
var geminiPath = regexp.MustCompile(`^/v1beta/models/([^/:]+):(streamGenerateContent|generateContent|countTokens)$`)

// Gemini CLI's own words around a tool's result, which repl-mcp cannot change: every
// text block is wrapped as untrusted context, each image is announced by a line of
// its own, and an isError result becomes one line that quotes the whole result as
// JSON.
var (
	geminiUntrusted  = regexp.MustCompile(`(?s)^<untrusted_context>\n(.*)\n</untrusted_context>$`)
	geminiImageNote  = regexp.MustCompile(`^\[Tool '[^']*' provided the following (image|audio) data with mime-type: [^\]]+\]$`)
	geminiToolError  = regexp.MustCompile(`(?s)^MCP tool '[^']*' reported tool error for function call: .*? with response: (\[.*\])$`)
	geminiBinaryNote = regexp.MustCompile(`^Binary content provided \(\d+ item\(s\)\)\.$`)
)

// geminiPart is one part of a content, of any kind the fake reads.
type geminiPart struct {
	Text             *string         `json:"text"`
	FunctionCall     *geminiCall     `json:"functionCall"`
	FunctionResponse *geminiResponse `json:"functionResponse"`
	InlineData       *geminiInline   `json:"inlineData"`
}

type geminiCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type geminiResponse struct {
	ID       string                     `json:"id"`
	Name     string                     `json:"name"`
	Response map[string]json.RawMessage `json:"response"`
	Parts    []geminiPart               `json:"parts"` // multimodal function responses (gemini-3- models)
}

type geminiInline struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

func (g geminiAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || m == nil {
		g.refuse(w, r, "no such endpoint in the fake Gemini API")
		return
	}
	if m[2] == "countTokens" {
		// Gemini CLI counts the tokens of a tool result it holds images in.
		io.Copy(io.Discard, io.LimitReader(r.Body, maxAPIBody))
		g.m.handledf("POST %s", r.URL.Path)
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 1})
		return
	}
	g.generate(w, r, m[1], m[2] == "streamGenerateContent")
}

func (g geminiAPI) refuse(w http.ResponseWriter, r *http.Request, why string) {
	g.m.unexpectedf("%s %s: %s", r.Method, r.URL.RequestURI(), why)
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"code": 404, "status": "NOT_FOUND",
		"message": "repl-mcp model-view fake: unexpected request " + r.Method + " " + r.URL.Path + ": " + why,
	}})
}

func (g geminiAPI) generate(w http.ResponseWriter, r *http.Request, model string, stream bool) {
	var req struct {
		Contents []geminiContent `json:"contents"`
		Tools    []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAPIBody)).Decode(&req); err != nil {
		g.refuse(w, r, "undecodable body: "+err.Error())
		return
	}
	scripted := false
	calls := map[string]*geminiCall{}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			switch {
			case c.Role == "user" && p.Text != nil && strings.Contains(*p.Text, g.m.prompt):
				scripted = true
			case p.FunctionCall != nil:
				calls[p.FunctionCall.ID] = p.FunctionCall
			}
		}
	}
	offered := map[string]bool{}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			offered[f.Name] = true
		}
	}
	if !scripted || len(offered) == 0 {
		g.refuse(w, r, fmt.Sprintf("a request outside the scripted conversation (model %s, %d contents, %d tools)", model, len(req.Contents), len(offered)))
		return
	}
	if !stream {
		g.refuse(w, r, "the scripted conversation without streamGenerateContent")
		return
	}
	g.m.countRequest()

	done := map[string]bool{}
	for i, c := range req.Contents {
		for j, p := range c.Parts {
			if p.FunctionResponse == nil {
				continue
			}
			fr := p.FunctionResponse
			id, ok := geminiStepOf(fr.ID)
			st := g.m.stepByID(id)
			call := calls[fr.ID]
			if !ok || st == nil || call == nil {
				g.m.problemf("a functionResponse for %q (%s), which the script never called", fr.ID, fr.Name)
				continue
			}
			done[id] = true
			gv := &given{Step: id, Tool: call.Name, Args: call.Args}
			gv.Raw, _ = json.Marshal(c.Parts[j:])
			g.read(gv, fr, c.Parts[j+1:], i)
			g.m.record(gv)
		}
	}

	st, args := g.m.next(done)
	var part map[string]any
	switch {
	case st == nil:
		part = map[string]any{"text": "The script is done."}
	case !offered[geminiToolName(st.server, st.tool)]:
		g.m.problemf("step %s: Gemini CLI offers no function %s; the script ends here", st.id, geminiToolName(st.server, st.tool))
		part = map[string]any{"text": "The tool was not offered."}
	default:
		part = map[string]any{"functionCall": map[string]any{"id": geminiCallID(st.id), "name": geminiToolName(st.server, st.tool), "args": args}}
	}
	sse := newSSE(w)
	sse.data(map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  model,
	})
}

// read fills gv from a functionResponse: its response's output (or error) text, and
// the images beside it, in the function response's own parts or in the parts that
// follow it in the same content (for models without multimodal function responses).
func (g geminiAPI) read(gv *given, fr *geminiResponse, after []geminiPart, content int) {
	for key, raw := range fr.Response {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			g.m.problemf("step %s: functionResponse.response.%s is not a string: %.200s", gv.Step, key, raw)
			continue
		}
		switch key {
		case "output", "error":
			g.readText(gv, s)
		default:
			g.m.problemf("step %s: functionResponse.response has a field %q the fake does not read", gv.Step, key)
		}
	}
	images := fr.Parts
	for _, p := range after {
		if p.FunctionResponse != nil || p.InlineData == nil {
			break
		}
		images = append(images, p)
	}
	for _, p := range images {
		if p.InlineData == nil {
			g.m.problemf("step %s: a function response part the fake does not read (content %d)", gv.Step, content)
			continue
		}
		gv.addImage(p.InlineData.MimeType, p.InlineData.Data)
	}
}

// readText splits Gemini CLI's output text into the result's own text blocks and its
// envelope. The blocks were joined by newlines, each wrapped as untrusted context; an
// error is one line quoting the result, whose text blocks are what the model reads
// of repl-mcp's words (the rest, the quoting and the JSON, is the envelope).
func (g geminiAPI) readText(gv *given, s string) {
	if m := geminiToolError.FindStringSubmatch(s); m != nil {
		gv.Envelope = append(gv.Envelope, s)
		var quoted []struct {
			FunctionResponse struct {
				Response struct {
					Content []struct {
						Type string `json:"type"`
						Text string `json:"text"`
					} `json:"content"`
					IsError bool `json:"isError"`
				} `json:"response"`
			} `json:"functionResponse"`
		}
		if err := json.Unmarshal([]byte(m[1]), &quoted); err != nil || len(quoted) == 0 {
			g.m.problemf("step %s: the tool error's quoted response is not JSON: %v", gv.Step, err)
			return
		}
		flag := quoted[0].FunctionResponse.Response.IsError
		gv.IsError = &flag
		for _, c := range quoted[0].FunctionResponse.Response.Content {
			if c.Type == "text" {
				gv.Texts = append(gv.Texts, c.Text)
			}
		}
		return
	}
	for _, block := range splitUntrusted(s) {
		switch {
		case geminiImageNote.MatchString(block), geminiBinaryNote.MatchString(block):
			gv.Envelope = append(gv.Envelope, block)
		default:
			if m := geminiUntrusted.FindStringSubmatch(block); m != nil {
				gv.Envelope = append(gv.Envelope, "<untrusted_context>\n\n</untrusted_context>")
				gv.Texts = append(gv.Texts, m[1])
			} else {
				gv.Texts = append(gv.Texts, block)
			}
		}
	}
}

// splitUntrusted cuts the joined output back into its parts: each wrapped text block
// whole (a block may hold newlines), and each other line on its own.
func splitUntrusted(s string) []string {
	var out []string
	for s != "" {
		if rest, ok := strings.CutPrefix(s, "<untrusted_context>\n"); ok {
			body, after, found := strings.Cut(rest, "\n</untrusted_context>")
			if !found {
				out = append(out, s)
				break
			}
			out = append(out, "<untrusted_context>\n"+body+"\n</untrusted_context>")
			s = strings.TrimPrefix(after, "\n")
			continue
		}
		line, after, _ := strings.Cut(s, "\n")
		out = append(out, line)
		s = after
	}
	return out
}

// data writes one SSE data line, flushed at once (the event line of event is what
// Anthropic's stream has and Gemini's and OpenAI's do not).
func (s *sse) data(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", bytes.TrimSpace(b))
	if s.f != nil {
		s.f.Flush()
	}
}
