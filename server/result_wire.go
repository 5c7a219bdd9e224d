package server

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolResult is a tools/call result as it is written: go-sdk's CallToolResult with
// isError always present (go-sdk drops a false one, and clients that read the raw
// JSON index result.isError), and without a MarshalJSON. encoding/json re-scans all
// that a MarshalJSON returns, byte by byte, to compact it, and go-sdk's result and
// content types each have one: their result was scanned again at every level, the
// structuredContent of an execution result (up to a megabyte) and the base64 of an
// image twice. Written field by field, a result is scanned only where a value is a
// json.RawMessage (most tools' encoded structuredContent, once), and a []byte (an
// image, a base64 artifact range) is written as base64 straight from its bytes.
type toolResult struct {
	mcp.ResultBase           // _meta, and what makes it an mcp.Result
	Content           []any  `json:"content"`
	StructuredContent any    `json:"structuredContent,omitempty"`
	IsError           bool   `json:"isError"`
	ResultType        string `json:"resultType,omitempty"`
}

// textBlock and imageBlock are go-sdk's text and image content as it writes them.
type (
	textBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	imageBlock struct {
		Type     string `json:"type"`
		MIMEType string `json:"mimeType"`
		Data     []byte `json:"data"`
	}
)

// wireResult is r to be written: a toolResult, or a flaggedResult when r holds
// anything a toolResult does not write. go-sdk decides what that is: its own
// encoding of r without content and structuredContent may hold isError and
// resultType (set by go-sdk for the 2026-07-28 protocol) and nothing else.
func wireResult(r *mcp.CallToolResult) mcp.Result {
	bare := *r
	bare.Meta, bare.Content, bare.StructuredContent = nil, nil, nil
	raw, err := bare.MarshalJSON()
	var fields map[string]json.RawMessage
	if err != nil || json.Unmarshal(raw, &fields) != nil {
		return flaggedResult{r}
	}
	w := &toolResult{ResultBase: mcp.ResultBase{Meta: r.Meta}, StructuredContent: r.StructuredContent, IsError: r.IsError}
	for name, value := range fields {
		switch name {
		case "content", "isError":
		case "resultType":
			if json.Unmarshal(value, &w.ResultType) != nil {
				return flaggedResult{r}
			}
		default:
			return flaggedResult{r}
		}
	}
	w.Content = make([]any, len(r.Content))
	for i, c := range r.Content {
		w.Content[i] = c // written by its MarshalJSON, unless it is plain text or an image
		switch c := c.(type) {
		case *mcp.TextContent:
			if c.Meta == nil && c.Annotations == nil {
				w.Content[i] = textBlock{Type: "text", Text: c.Text}
			}
		case *mcp.ImageContent:
			if c.Meta == nil && c.Annotations == nil {
				data := c.Data
				if data == nil {
					data = []byte{} // "", as go-sdk writes it
				}
				w.Content[i] = imageBlock{Type: "image", MIMEType: c.MIMEType, Data: data}
			}
		}
	}
	return w
}
