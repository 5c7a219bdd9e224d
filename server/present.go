package server

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Presentation limits (docs/contract.md §3.4).
const (
	textLimit   = 8192
	resultLimit = 1000000
	textCutNote = "\n[Text cut at 8 KiB; the complete bounded output is in structuredContent.]"
	omittedText = "Output presentation omitted; inspect structuredContent."
	// envelopeOverhead covers the JSON-RPC and CallToolResult keys around the value
	// and the text.
	envelopeOverhead = 256
)

// present turns a tool's value into a CallToolResult: the value as structuredContent
// and one text block, with isError read from the value's type (see encodeValue).
func present(value any) *mcp.CallToolResult {
	structured, failed := encodeValue(value)
	text := presentationText(value, structured)
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

// encodedResult is a tool value already encoded as a compact JSON object, with its
// isError flag: artifact_forward's downstream envelope, which arrives encoded and
// carries its own isError.
type encodedResult struct {
	JSON    json.RawMessage
	IsError bool
}

// encodeValue encodes a tool's value and says whether it is an error. Only three
// kinds of value are errors, each known by its type: a failure (a handler's error),
// a failed execution result, and an encoded result that says so. Nothing is guessed
// from the encoded JSON.
func encodeValue(value any) (structured []byte, isError bool) {
	var err error
	switch v := value.(type) {
	case encodedResult:
		return v.JSON, v.IsError
	case *repl.Result:
		isError = !v.Success || v.Error != nil
	case failed:
		isError = true
	}
	if structured, err = json.Marshal(value); err != nil {
		structured, _ = json.Marshal(map[string]string{"error": "result could not be encoded"})
		return structured, true
	}
	return structured, isError
}

// presentationText is the human text of a value: an execution result reads like a
// terminal; anything else is its compact JSON.
func presentationText(value any, structured []byte) string {
	r, ok := value.(*repl.Result)
	if !ok {
		return string(structured)
	}
	var b strings.Builder
	b.WriteString(r.Stdout)
	if r.Stderr != "" {
		b.WriteString("\nStderr:\n" + r.Stderr)
	}
	if r.ReturnValue != nil && *r.ReturnValue != "" {
		b.WriteString("\n" + *r.ReturnValue)
	}
	if r.Error != nil {
		b.WriteString("\n" + *r.Error)
	}
	if r.State == repl.StateCleared {
		b.WriteString("\nWorker state cleared.")
	}
	if b.Len() == 0 {
		return "Execution completed."
	}
	return b.String()
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
