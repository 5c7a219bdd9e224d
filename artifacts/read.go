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
	if err := ctx.Err(); err != nil {
		return Range{}, err
	}
	e, err := s.acquire(owner, id)
	if err != nil {
		return Range{}, err
	}
	defer s.release(e)
	size := e.ref.Size
	if offset < 0 || offset > size || length < 0 || length > MaxReadLength {
		return Range{}, ErrRange
	}
	length = min(length, size-offset)
	done, err := s.tryIO()
	if err != nil {
		return Range{}, err
	}
	defer done()

	buf := make([]byte, length)
	if _, err := e.f.ReadAt(buf, offset); err != nil && !(err == io.EOF && length == 0) {
		return Range{}, fmt.Errorf("%w: %w", ErrStorage, sysCause(err))
	}
	r := Range{Artifact: e.ref, Offset: offset, Length: length, Encoding: encoding, HasMore: offset+length < size}
	switch encoding {
	case "text":
		if !utf8.Valid(buf) {
			return Range{}, ErrRangeUTF8
		}
		r.Content = string(buf)
	case "hex":
		r.Content = hex.EncodeToString(buf)
	case "base64":
		r.Content = base64.StdEncoding.EncodeToString(buf)
	}
	return r, nil
}
