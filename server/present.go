package server

import (
	"bytes"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Presentation limits of the structured form (docs/contract.md §3.4).
const (
	textLimit   = 8192
	resultLimit = 1000000
	textCutNote = "\n[Text cut at 8 KiB; the complete bounded output is in structuredContent.]"
	omittedText = "Output presentation omitted; inspect structuredContent."
	// envelopeOverhead covers the JSON-RPC and CallToolResult keys around the value
	// and the text.
	envelopeOverhead = 256
)

// present turns a tool's value into the CallToolResult of form f. isError comes
// from the value's type (see encodeValue) and is the same in both forms. kept is
// what keepText made of the complete text of a text-form result that its text
// cuts, nil when there was nothing to keep. Presenting is a function of its
// arguments: it reads no file, writes none and makes no artifact.
func present(f form, value any, kept *keptText) *mcp.CallToolResult {
	if r, ok := value.(artifactRange); ok {
		return presentRange(f, r) // up to 64 KiB of content, written once (tool_artifact_read.go)
	}
	if f.text() {
		failed := false
		if e, ok := value.(execution); ok {
			failed = e.failed() // the text form sends no JSON: nothing to encode
		} else {
			_, failed = encodeValue(value)
		}
		res := withImages(&mcp.CallToolResult{
			Content: modelText(value, kept).content(),
			IsError: failed,
		}, value)
		if f == formCode {
			structured, _ := encodeValue(value)
			withStructured(res, structured)
		}
		return res
	}
	structured, failed := encodeValue(value)
	text := structuredText(value, structured)
	if len(text) > textLimit {
		text = repl.CutUTF8(text, textLimit) + textCutNote
		structured = withField(structured, "text_truncated", true)
	}
	// The reply carries the value and the text, each JSON-encoded; keep the whole
	// line under the 1 MiB frame by dropping the text when both do not fit.
	encodedText, _ := json.Marshal(text)
	if len(structured)+len(encodedText)+envelopeOverhead > resultLimit {
		text = omittedText
	}
	return withImages(&mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: json.RawMessage(structured),
		IsError:           failed,
	}, value)
}

// withStructured gives a text-form result structuredContent too (formCode), when the
// reply stays within resultLimit with it; else the text stands alone, whole.
func withStructured(res *mcp.CallToolResult, structured []byte) {
	encoded, err := json.Marshal(res)
	if err != nil || len(encoded)+len(structured)+envelopeOverhead > resultLimit {
		return
	}
	res.StructuredContent = json.RawMessage(structured)
}

// encodedResult is a tool value already encoded as a compact JSON object, with its
// isError flag: artifact_forward's downstream envelope, which arrives encoded and
// carries its own isError.
type encodedResult struct {
	JSON    json.RawMessage
	IsError bool
}

// encodeValue encodes a tool's value and says whether it is an error (isError, or
// a value that could not be encoded).
func encodeValue(value any) (structured []byte, failed bool) {
	var v any = value
	switch e := value.(type) {
	case encodedResult:
		return e.JSON, e.IsError
	case execution:
		v = e.Result
	}
	structured, err := json.Marshal(v)
	if err != nil {
		msg := "result could not be encoded"
		if _, ok := value.(execution); ok {
			// A Result is strings, numbers and raw JSON the worker sent and the
			// supervisor bounded; say why rather than answer nothing.
			msg += ": " + err.Error()
		}
		structured, _ = json.Marshal(map[string]string{"error": msg})
		return structured, true
	}
	return structured, isError(value)
}

// isError says whether a tool's value is an error. Only three kinds of value are,
// each known by its type: a failure (a handler's error), a failed execution result,
// and an encoded result that says so. Nothing is guessed from the encoded JSON.
func isError(value any) bool {
	switch v := value.(type) {
	case encodedResult:
		return v.IsError
	case execution:
		return v.failed()
	case failed:
		return true
	}
	return false
}

// structuredText is the text block beside structuredContent: an execution
// result's parts as a terminal shows them; anything else its compact JSON.
func structuredText(value any, structured []byte) string {
	if e, ok := value.(execution); ok {
		return e.structuredText()
	}
	return string(structured)
}

// textual is a tool's value with a text form of its own (docs/contract.md §3.4),
// rendered in its tool's file: what the model needs from the value, never its
// JSON. The text may be longer than modelTextLimit; modelText cuts it.
type textual interface {
	modelText() reply
}

// toolText is the text form of a tool's value other than an execution result, in
// full: its own text, else its JSON.
func toolText(value any) reply {
	if t, ok := value.(textual); ok {
		return t.modelText()
	}
	structured, _ := encodeValue(value)
	return reply{body: string(structured)}
}

// modelText is the whole of a text-form result: an execution reads like a
// terminal with one footer line; every other tool has a text of its own
// (toolText). It stays within modelTextLimit; the complete text of what it cuts
// that no artifact holds is kept (an artifact named in the text, or why not).
func modelText(value any, kept *keptText) reply {
	if e, ok := value.(execution); ok {
		return e.text(kept)
	}
	r := toolText(value)
	if visibleLen(r.text()) <= modelTextLimit {
		return reply{body: visible(r.body), footer: visible(r.footer)}
	}
	if kept == nil {
		kept = &keptText{err: errTextNotKept}
	}
	item := "[complete text: " + refText(kept.ref) + "; session " + kept.session + "]"
	if kept.err != nil {
		item = "[complete text not saved: " + cutFooter(kept.err.Error(), footerErrorMax) + "]"
	}
	text := r.text()
	return withFooter(cutMiddle(text, modelTextLimit-len(item)-1, "the text"), item)
}

// withField adds one field to an encoded JSON object.
func withField(object []byte, name string, value any) []byte {
	encoded, _ := json.Marshal(value)
	key, _ := json.Marshal(name)
	trimmed := bytes.TrimRight(object, " \n")
	if len(trimmed) < 2 || trimmed[len(trimmed)-1] != '}' {
		return object
	}
	body := trimmed[:len(trimmed)-1]
	sep := ","
	if bytes.Equal(bytes.TrimSpace(body), []byte("{")) {
		sep = ""
	}
	out := append([]byte{}, body...)
	out = append(out, sep...)
	out = append(out, key...)
	out = append(out, ':')
	out = append(out, encoded...)
	return append(out, '}')
}
