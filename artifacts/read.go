package artifacts

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"unicode/utf8"
)

// Range is one range read of an artifact (docs/contract.md §3.9, artifact_read).
type Range struct {
	Artifact Ref    `json:"artifact"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"` // after clipping to the end of the artifact
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
	HasMore  bool   `json:"has_more"` // offset+length < size
}

// Read returns length bytes of owner's artifact id from offset, clipped to its end,
// encoded as "text" (the range must be complete UTF-8), "hex" (lowercase) or "base64"
// (standard, padded); "" means text. It does not re-hash the artifact.
func (s *Store) Read(ctx context.Context, owner, id string, offset, length int64, encoding string) (Range, error) {
	if encoding == "" {
		encoding = "text"
	}
	if encoding != "text" && encoding != "hex" && encoding != "base64" {
		return Range{}, ErrEncoding
	}
	r, data, err := s.ReadBytes(ctx, owner, id, offset, length)
	if err != nil {
		return Range{}, err
	}
	r.Encoding = encoding
	switch encoding {
	case "text":
		if !utf8.Valid(data) {
			return Range{}, ErrRangeUTF8
		}
		r.Content = string(data)
	case "hex":
		r.Content = hex.EncodeToString(data)
	case "base64":
		r.Content = base64.StdEncoding.EncodeToString(data)
	}
	return r, nil
}

// ReadBytes is [Store.Read] without the encoding: it returns the range, with neither
// Encoding nor Content set, and its bytes, for a caller that writes them out itself
// (artifact_read's base64 ranges, which encoding/json writes from the bytes).
func (s *Store) ReadBytes(ctx context.Context, owner, id string, offset, length int64) (Range, []byte, error) {
	if err := ctx.Err(); err != nil {
		return Range{}, nil, err
	}
	e, err := s.acquire(owner, id)
	if err != nil {
		return Range{}, nil, err
	}
	defer s.release(e)
	size := e.ref.Size
	if offset < 0 || offset > size || length < 0 || length > MaxReadLength {
		return Range{}, nil, ErrRange
	}
	length = min(length, size-offset)
	done, err := s.tryIO()
	if err != nil {
		return Range{}, nil, err
	}
	defer done()

	buf := make([]byte, length)
	if _, err := e.f.ReadAt(buf, offset); err != nil && !(err == io.EOF && length == 0) {
		return Range{}, nil, fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
	}
	return Range{Artifact: e.ref, Offset: offset, Length: length, HasMore: offset+length < size}, buf, nil
}
