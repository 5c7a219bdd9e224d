package server

import (
	"encoding/base64"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// imageBlockOverhead is the JSON of an image block around its base64 and MIME
	// type: {"type":"image","mimeType":"","data":""} and a comma.
	imageBlockOverhead = 48
	// omittedMarkBytes is room for the omitted note one left-out image adds to
	// structuredContent.
	omittedMarkBytes = len(msgImageLeftOut) + 16
	msgImageLeftOut  = "Image left out of this reply: the reply would pass 1,000,000 bytes; print less in the cell that shows it, or save the figure to a file and artifact(path=...)"
)

// withImages adds images, an execution result's, to its presentation res as MCP
// image content, after the text, in order (docs/contract.md §3.4): each while the
// whole reply stays within resultLimit. structured is res's structuredContent, nil in
// the text form. An image that does not fit is left out, and its entry in
// structuredContent's `images` says so; one whose bytes the history no longer keeps
// has its own note there already; in the text form, which has no structuredContent,
// the text says so.
func withImages(res *mcp.CallToolResult, shown []repl.Image, structured []byte) *mcp.CallToolResult {
	if len(shown) == 0 {
		return res
	}
	used := replyLen(res, structured) + envelopeOverhead + len(shown)*omittedMarkBytes
	images := append([]repl.Image(nil), shown...)
	leftOut := false
	for i, img := range images {
		if img.Data == nil {
			continue
		}
		size := base64.StdEncoding.EncodedLen(len(img.Data)) + len(img.MIME) + imageBlockOverhead
		if used+size > resultLimit {
			images[i].Omitted, leftOut = msgImageLeftOut, true
			continue
		}
		used += size
		res.Content = append(res.Content, &mcp.ImageContent{Data: img.Data, MIMEType: img.MIME})
	}
	if !leftOut {
		return res
	}
	if res.StructuredContent == nil {
		// The text form: in the last text block, the footer's.
		for i := len(res.Content) - 1; i >= 0; i-- {
			if text, ok := res.Content[i].(*mcp.TextContent); ok {
				text.Text += "\n[" + msgImageLeftOut + "]"
				break
			}
		}
		return res
	}
	res.StructuredContent = withImageNotes(res.StructuredContent, images)
	return res
}

// withImageNotes replaces the `images` of an encoded result by images, whose notes say
// which were left out.
func withImageNotes(structured any, images []repl.Image) any {
	raw, ok := structured.(json.RawMessage)
	var fields map[string]json.RawMessage
	if !ok || json.Unmarshal(raw, &fields) != nil {
		return structured
	}
	fields["images"], _ = json.Marshal(images)
	patched, err := json.Marshal(fields)
	if err != nil {
		return structured
	}
	return json.RawMessage(patched)
}
