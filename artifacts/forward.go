package artifacts

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

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
