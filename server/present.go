package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/iota-uz/repl-mcp/artifacts"
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
// from the value's type (see encodeValue) and is the same in both forms. sess is
// the routed session, nil for tools that are not routed.
func (s *Server) present(ctx context.Context, f form, sess *repl.Session, value any) *mcp.CallToolResult {
	if r, ok := value.(artifactRange); ok {
		return presentRange(f, r) // up to 64 KiB of content, written once (tool_artifact_read.go)
	}
	structured, failed := encodeValue(value)
	if f == formText {
		return withImages(&mcp.CallToolResult{
			Content: s.modelText(ctx, sess, value, structured).content(),
			IsError: failed,
		}, value)
	}
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
	case execution:
		return v.json, v.failed
	case failed:
		isError = true
	}
	if structured, err = json.Marshal(value); err != nil {
		structured, _ = json.Marshal(map[string]string{"error": "result could not be encoded"})
		return structured, true
	}
	return structured, isError
}

// structuredText is the text block beside structuredContent: an execution
// result's parts as a terminal shows them; anything else its compact JSON.
func structuredText(value any, structured []byte) string {
	if _, ok := value.(execution); ok {
		var v execView
		if json.Unmarshal(structured, &v) == nil {
			return structuredExecText(&v)
		}
	}
	return string(structured)
}

// modelText is the whole of a text-form result: an execution reads like a
// terminal with one footer line; every other tool has a compact text of its own
// (text_tools.go). It stays within modelTextLimit; what it cuts that no artifact
// holds is kept as an artifact of the session, named in the text.
func (s *Server) modelText(ctx context.Context, sess *repl.Session, value any, structured []byte) reply {
	if e, ok := value.(execution); ok {
		var v execView
		if err := json.Unmarshal(structured, &v); err != nil {
			return reply{body: "Error: the execution result could not be read: " + err.Error()}
		}
		v.repr, v.cuts, v.bgCuts = e.repr, e.cuts, e.bgCuts
		return execText(&v, e.polled, func(text string) (artifactRef, error) {
			return s.saveText(ctx, sess, v.RunID, text)
		})
	}
	r := toolText(value, structured)
	if visibleLen(r.text()) <= modelTextLimit {
		return reply{body: visible(r.body), footer: visible(r.footer)}
	}
	text := r.text()
	item := ""
	if ref, err := s.saveText(ctx, sess, "", text); err != nil {
		item = "[complete text not saved: " + cutFooter(err.Error(), footerErrorMax) + "]"
	} else {
		item = "[complete text: " + ref.String() + "; session " + sess.ID() + "]"
	}
	return withFooter(cutMiddle(text, modelTextLimit-len(item)-1, "the text"), item)
}

// savedTexts remembers the artifact made of each cut execution's text, so that
// reading the same run again with python_run names the same artifact instead of
// filling the store with copies. Bounded; the oldest is forgotten first.
type savedTexts struct {
	mu    sync.Mutex
	refs  map[string]artifactRef // by session and run id
	order []string
}

// savedTextsKept bounds savedTexts: as many as the store can hold artifacts.
const savedTextsKept = artifacts.MaxEntries

var errNoSessionStore = errors.New("this result has no session's artifact store to keep it in")

// saveText keeps text as a text artifact of sess. run, when not "", names the
// execution the text is of: a run whose text was saved before, and whose artifact
// is still there, gets that artifact back.
func (s *Server) saveText(ctx context.Context, sess *repl.Session, run, text string) (artifactRef, error) {
	if sess == nil || s.artifacts == nil {
		return artifactRef{}, errNoSessionStore
	}
	key := sess.ID() + "/" + run
	if run != "" {
		if ref, ok := s.saved.get(key); ok {
			if _, err := s.artifacts.Read(ctx, sess.ID(), ref.ID, 0, 0, "hex"); err == nil {
				return ref, nil
			}
		}
	}
	// The store imports files, checking them as it copies; the temporary file is
	// private and gone when this returns.
	f, err := os.CreateTemp("", "repl-mcp-text-*")
	if err != nil {
		return artifactRef{}, err
	}
	path, _ := filepath.Abs(f.Name())
	defer os.Remove(path)
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return artifactRef{}, err
	}
	created, err := s.artifacts.Create(ctx, sess.ID(), path, artifacts.FormatText)
	if err != nil {
		return artifactRef{}, err
	}
	ref := artifactRef{ID: created.ID, Size: created.Size, Format: string(created.Format)}
	if run != "" {
		s.saved.put(key, ref)
	}
	return ref, nil
}

func (t *savedTexts) get(key string) (artifactRef, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ref, ok := t.refs[key]
	return ref, ok
}

func (t *savedTexts) put(key string, ref artifactRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refs == nil {
		t.refs = map[string]artifactRef{}
	}
	if _, ok := t.refs[key]; !ok {
		t.order = append(t.order, key)
	}
	t.refs[key] = ref
	for len(t.order) > savedTextsKept {
		delete(t.refs, t.order[0])
		t.order = t.order[1:]
	}
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
