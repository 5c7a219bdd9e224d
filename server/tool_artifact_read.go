package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/internal/utf8cut"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type artifactReadParams struct {
	SessionID sessionArg    `json:"session_id"`
	ID        artifactIDArg `json:"id"`
	Offset    uint64        `json:"offset,omitempty" schema:"default=0" jsonschema:"First byte to read."`
	Length    readLengthArg `json:"length,omitempty"`
	Encoding  string        `json:"encoding,omitempty" schema:"enum=text|base64|hex,default=text" jsonschema:"text (UTF-8), base64 or hex."`
}

// artifactRange is artifact_read's answer: one range of the artifact. A base64
// range keeps its bytes in data, and its Content stays empty: encoding/json writes
// a []byte as standard padded base64 straight from the bytes (rangeJSON), where a
// base64 string would be encoded first and then escaped byte by byte.
type artifactRange struct {
	artifacts.Range
	identity
	data []byte // the range's bytes, of a base64 range only
}

// rangeJSON is an artifact range as it is written, in the order of its fields.
type rangeJSON struct {
	Artifact artifacts.Ref `json:"artifact"`
	Offset   int64         `json:"offset"`
	Length   int64         `json:"length"`
	Encoding string        `json:"encoding" schema:"enum=text|base64|hex"`
	Content  any           `json:"content" schema:"type=string"` // a string, or the []byte of a base64 range
	HasMore  bool          `json:"has_more"`
	identity
	TextTruncated bool `json:"text_truncated,omitempty"`
}

// wire is r as it is written, with at most limit bytes of its content (the whole
// of it when limit is negative).
func (r artifactRange) wire(limit int) rangeJSON {
	w := rangeJSON{Artifact: r.Artifact, Offset: r.Offset, Length: r.Length, Encoding: r.Encoding,
		HasMore: r.HasMore, identity: r.identity}
	if r.Encoding == "base64" {
		data := r.data
		if data == nil {
			data = []byte{} // "", not null
		}
		if limit >= 0 && len(data) > limit {
			data = data[:limit]
		}
		w.Content = data
	} else {
		content := r.Content
		if limit >= 0 && len(content) > limit {
			content = content[:limit]
		}
		w.Content = content
	}
	return w
}

// MarshalJSON writes the whole range; the structured form writes it without this
// (presentRange), as encoding/json would re-scan what a MarshalJSON returns.
func (r artifactRange) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire(-1)) }

// contentBytes is the raw size of the range's content: the bytes of a base64 range,
// the encoded content of the others.
func (r artifactRange) contentBytes() int {
	if r.Encoding == "base64" {
		return len(r.data)
	}
	return len(r.Content)
}

// The structured form of a range never drops its text (§3.4): the longest range,
// 65,536 bytes of text that all escape six-fold, its text block and the rest of the
// reply stay under the reply limit. Checked when compiling: a negative constant is
// no uint.
const _ = uint(resultLimit - (6*artifacts.MaxReadLength + 2*(textLimit+len(textCutNote)) + 4096 + envelopeOverhead))

// presentRange is a range as present makes any value of form f, without encoding
// the range more than once. The text form is rangeText. The structured form is the
// range's compact JSON as structuredContent and the same JSON cut at 8 KiB as its
// text, and that text is made from at most textLimit bytes of the content: the JSON
// before the content is the same, and a longer content encodes to more than
// textLimit bytes of JSON (escapes never shrink text, base64 and hex grow it; a
// character cut at the end of a text prefix is written as U+FFFD, after those
// bytes), so both JSON texts agree on every byte a cut text keeps.
func presentRange(f form, r artifactRange) *mcp.CallToolResult {
	if f.text() {
		res := &mcp.CallToolResult{Content: rangeText(r).content()}
		if f == formCode {
			structured, _ := json.Marshal(r.wire(-1))
			withStructured(res, structured)
		}
		return res
	}
	w := r.wire(-1)
	head, err := json.Marshal(r.wire(textLimit))
	if err != nil {
		head, _ = json.Marshal(w) // not reached: a range always encodes
	}
	text := string(head)
	if r.contentBytes() > textLimit || len(text) > textLimit {
		text = utf8cut.Prefix(text, textLimit) + textCutNote
		w.TextTruncated = true
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: w}
}

func (s *Server) artifactReadTool() tool {
	return tool{
		name: "artifact_read",
		description: "Read a range of an artifact: at most 65,536 bytes from offset. encoding text needs the range to " +
			"be complete UTF-8 (move the boundaries or ask for hex or base64). The answer says whether bytes follow, and from which offset.",
		output:          []variant{shape[rangeJSON](), shape[toolFailure]()},
		annotations:     annotations(true, false, true, false),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p artifactReadParams) (any, error) {
			store, err := s.store()
			if err != nil {
				return nil, err
			}
			// An offset beyond int64 is beyond any artifact: the store answers it as
			// the range error it is.
			offset := int64(min(p.Offset, math.MaxInt64))
			if p.Encoding == "base64" {
				r, data, err := store.ReadBytes(ctx, sess.ID(), string(p.ID), offset, int64(p.Length))
				if err != nil {
					return nil, err
				}
				r.Encoding = "base64"
				return artifactRange{Range: r, identity: identify(sess), data: data}, nil
			}
			r, err := store.Read(ctx, sess.ID(), string(p.ID), offset, int64(p.Length), p.Encoding)
			if err != nil {
				return nil, err
			}
			return artifactRange{Range: r, identity: identify(sess)}, nil
		}),
	}
}

// modelText is the range's content, as much as fits, and where to read on (rangeText).
func (r artifactRange) modelText() reply { return rangeText(r) }

// rangeText is an artifact range: the content, as much of it as fits, and where
// to go on from. What does not fit is not lost: it is the artifact, read on from
// the offset the footer gives.
func rangeText(r artifactRange) reply {
	room := modelTextLimit - 400
	content, length := r.Content, r.Length
	switch {
	case r.Encoding == "base64":
		// The range's bytes, not its base64 (artifactRange): as many whole groups of
		// three as fit, which encode without padding.
		data := r.data
		if base64.StdEncoding.EncodedLen(len(data)) > room {
			data = data[:room/4*3]
		}
		content, length = base64.StdEncoding.EncodeToString(data), int64(len(data))
	case r.Encoding == "text":
		// Shown as the text form shows any text (visible.go), cut in its own bytes.
		content = visiblePrefix(content, room)
		length = int64(len(content))
		content = visible(content)
	case len(content) <= room:
	case r.Encoding == "hex":
		content = content[:room&^1]
		length = int64(len(content) / 2)
	default:
		content = utf8cut.Prefix(content, room)
		length = int64(len(content))
	}
	end := r.Offset + length
	next := "the end"
	if end < r.Artifact.Size {
		next = fmt.Sprintf("more from offset %d", end)
	}
	// The content block is the range's content exactly, for code that reads it.
	return reply{body: content, footer: fmt.Sprintf("[artifact %s, bytes %d to %d of %s (%s); %s]",
		r.Artifact.ID, r.Offset, end, count(r.Artifact.Size), r.Encoding, next)}
}
