package artifacts

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Forward asks for owner's artifact id, converted by format (see ForwardValue), to
// be placed as argument of a downstream tool call beside the other arguments (the
// artifact wins a clash), and makes that call with call, whose result it returns.
// The call itself is the caller's: the store knows no broker.
func (s *Store) Forward(ctx context.Context, owner string, req ForwardRequest, call func(ctx context.Context, arguments json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	value, err := s.ForwardValue(ctx, owner, req.ID, req.Format)
	if err != nil {
		return nil, err
	}
	args := make(map[string]json.RawMessage, len(req.Arguments)+1)
	for k, v := range req.Arguments {
		args[k] = v
	}
	args[req.Argument] = value
	arguments, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode the downstream call's arguments: %w", err)
	}
	return call(ctx, arguments)
}

// ForwardRequest is which artifact to forward, how, and as which argument.
type ForwardRequest struct {
	ID       string
	Format   string // json (or ""), text or base64
	Argument string // the tool argument that receives the artifact
	// Arguments are the tool's other arguments.
	Arguments map[string]json.RawMessage
}

// ForwardValue returns owner's artifact id as the JSON value to place as one argument
// of a downstream tool call: with format "json" (or "") the artifact's JSON value,
// compacted; with "text" a JSON string of its UTF-8 text; with "base64" a JSON string
// of the standard base64 of its bytes. The artifact must be at most 512 KiB and its
// SHA-256 is verified first. The format converts the bytes whatever format the
// artifact was created with.
func (s *Store) ForwardValue(ctx context.Context, owner, id, format string) (json.RawMessage, error) {
	switch format {
	case "", "json", "text", "base64":
	default:
		return nil, ErrForwardFormat
	}
	e, err := s.acquire(owner, id)
	if err != nil {
		return nil, err
	}
	defer s.release(e)
	if e.ref.Size > MaxForwardBytes {
		return nil, ErrForwardTooLarge
	}
	done, err := s.tryIO()
	if err != nil {
		return nil, err
	}
	defer done()
	data, err := readVerified(ctx, e)
	if err != nil {
		return nil, err
	}

	switch format {
	case "text":
		if !utf8.Valid(data) {
			return nil, ErrForwardText
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(string(data)); err != nil {
			return nil, ErrForwardText
		}
		return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
	case "base64":
		out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(data))+2)
		out = append(out, '"')
		out = base64.StdEncoding.AppendEncode(out, data)
		return json.RawMessage(append(out, '"')), nil
	default:
		if !validJSON(data) {
			return nil, ErrForwardJSON
		}
		var b bytes.Buffer
		if err := json.Compact(&b, data); err != nil {
			return nil, ErrForwardJSON
		}
		return json.RawMessage(b.Bytes()), nil
	}
}

// validJSON reports whether data is UTF-8 JSON within MaxJSONDepth.
func validJSON(data []byte) bool {
	c := newChecker(FormatJSON)
	return c.write(data) == nil && c.finish() == nil
}
