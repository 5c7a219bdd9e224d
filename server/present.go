package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/iota-uz/repl-mcp/internal/utf8cut"
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

// presentable is a tool's value as present reads it. Every tool's value has one
// (presentation): an execution result is its own, and any other value is read
// through toolValue. Presenting is a function of its arguments: it reads no file,
// writes none and makes no artifact.
type presentable interface {
	// structuredForm is the structured form's structuredContent, compact JSON, and
	// the text block beside it, cut at textLimit (the JSON then says so,
	// text_truncated), and whether the value is an error (isError).
	structuredForm() (structured []byte, text string, failed bool)
	// encode is structuredContent beside a text form (formCode).
	encode() []byte
	// failed is isError without the JSON: the text form sends none.
	failed() bool
	// completeText is the text a text-form result must keep as an artifact, because
	// its text cuts what no artifact holds; "" when it cuts nothing of the kind.
	completeText() string
	// textForm is the whole of a text-form result within modelTextLimit, naming
	// kept: what keepText made of completeText, nil when that was "".
	textForm(kept *keptText) reply
	// images are what the value shows as MCP image content.
	images() []repl.Image
}

// An execution result is presentable as every tool's value is.
var _ presentable = execution{}

// presentation is value as present reads it.
func presentation(value any) presentable {
	if p, ok := value.(presentable); ok {
		return p
	}
	return &toolValue{value: value}
}

// present turns a tool's value into the CallToolResult of form f. isError comes
// from the value's type and is the same in both forms. kept is what keepText made of
// the complete text of a text-form result that its text cuts, nil when there was
// nothing to keep.
func present(f form, value any, kept *keptText) *mcp.CallToolResult {
	if r, ok := value.(artifactRange); ok {
		return presentRange(f, r) // up to 64 KiB of content, written once (tool_artifact_read.go)
	}
	p := presentation(value)
	if f.text() {
		res := withImages(&mcp.CallToolResult{Content: p.textForm(kept).content(), IsError: p.failed()}, p.images(), nil)
		if f == formCode {
			withStructured(res, p.encode())
		}
		return res
	}
	structured, text, failed := p.structuredForm()
	// The reply carries the value and the text, each JSON-encoded; keep the whole
	// line under the 1 MiB frame by dropping the text when both do not fit.
	if len(structured)+jsonStringLen(text)+envelopeOverhead > resultLimit {
		text = omittedText
	}
	return withImages(&mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: json.RawMessage(structured),
		IsError:           failed,
	}, p.images(), structured)
}

// cutStructuredText cuts the text block beside structuredContent at textLimit, and
// says whether it did.
func cutStructuredText(text string) (string, bool) {
	if len(text) <= textLimit {
		return text, false
	}
	return utf8cut.Prefix(text, textLimit) + textCutNote, true
}

// withStructured gives a text-form result structuredContent too (formCode), when the
// reply stays within resultLimit with it; else the text stands alone, whole.
func withStructured(res *mcp.CallToolResult, structured []byte) {
	if replyLen(res, nil)+len(structured)+envelopeOverhead > resultLimit {
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

// toolValue is the value of a tool other than the execution tools, as present reads
// it: its JSON is its structuredContent and the text beside it; its text form is its
// own (textual), else its JSON, cut in its middle past modelTextLimit.
type toolValue struct {
	value any
	// json is the value's JSON once encoded, and broken says that it could not be
	// encoded (json then says so): one encoding per call, whichever form needs it.
	json    []byte
	broken  bool
	encoded bool
}

// encode encodes the value. A value that cannot be encoded is an error that says so
// (failed).
func (v *toolValue) encode() []byte {
	v.encodeOnce()
	return v.json
}

// encodeOnce encodes the value, once. The JSON is left in the encoder's buffer,
// which mostly has room for the flag structuredForm may add.
func (v *toolValue) encodeOnce() {
	if v.encoded {
		return
	}
	v.encoded = true
	if e, ok := v.value.(encodedResult); ok {
		v.json = e.JSON
		return
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v.value); err != nil {
		v.json, _ = json.Marshal(map[string]string{"error": "result could not be encoded"})
		v.broken = true
		return
	}
	v.json = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func (v *toolValue) structuredForm() ([]byte, string, bool) {
	structured, failed := v.encode(), v.failed()
	// As much of the JSON as the text block shows, and a byte to tell where a
	// character starts.
	text, cut := cutStructuredText(string(structured[:min(len(structured), textLimit+1)]))
	if cut {
		if _, encoded := v.value.(encodedResult); encoded || len(structured) < 2 || structured[len(structured)-1] != '}' {
			structured = withField(structured, "text_truncated", true) // not ours to write into
		} else {
			structured = append(structured[:len(structured)-1], textTruncatedField...)
		}
	}
	return structured, text, failed
}

// textTruncatedField closes a JSON object with the flag of a text block cut at 8 KiB.
const textTruncatedField = `,"text_truncated":true}`

// failed says whether the value is an error. Only two kinds of tool value are, each
// known by its type: a failure (a handler's error) and an encoded result that says
// so; and a value that could not be encoded is one, whose JSON says so. Nothing is
// guessed from the encoded JSON.
func (v *toolValue) failed() bool {
	switch e := v.value.(type) {
	case encodedResult:
		return e.IsError
	case failed:
		return true
	}
	v.encodeOnce()
	return v.broken
}

// text is the value's text form in full: its own text, else its JSON.
func (v *toolValue) text() reply {
	if t, ok := v.value.(textual); ok {
		return t.modelText()
	}
	return reply{body: string(v.encode())}
}

func (v *toolValue) completeText() string {
	if r := v.text(); visibleLen(r.text()) > modelTextLimit {
		return r.text()
	}
	return ""
}

// textForm is the value's text within modelTextLimit: whole, or cut in its middle
// with the artifact that keeps all of it named, or why there is none.
func (v *toolValue) textForm(kept *keptText) reply {
	r := v.text()
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

func (*toolValue) images() []repl.Image { return nil }

// textual is a tool's value with a text form of its own (docs/contract.md §3.4),
// rendered in its tool's file: what the model needs from the value, never its
// JSON. The text may be longer than modelTextLimit; toolValue.textForm cuts it.
type textual interface {
	modelText() reply
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

// jsonStringLen is the length of s as json.Marshal encodes it, written without
// encoding it: quotes, the two-byte escapes, \u00XX for the other control characters
// and for <, > and &, \ufffd for a byte that is no UTF-8, \u2028 and \u2029.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// replyLen is the length of res as json.Marshal encodes it, with structured as its
// structuredContent (nil for none), written without encoding it: what the bounds of
// a reply measure. res holds only the text and image blocks present makes.
func replyLen(res *mcp.CallToolResult, structured []byte) int {
	n := len(`{"content":[]}`)
	for i, c := range res.Content {
		if i > 0 {
			n++ // the comma
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			n += len(`{"type":"text","text":}`) + jsonStringLen(c.Text)
		case *mcp.ImageContent:
			n += len(`{"type":"image","mimeType":,"data":""}`) + jsonStringLen(c.MIMEType) + base64.StdEncoding.EncodedLen(len(c.Data))
		}
	}
	if structured != nil {
		n += len(`,"structuredContent":`) + len(structured)
	}
	if res.IsError {
		n += len(`,"isError":true`)
	}
	return n
}
