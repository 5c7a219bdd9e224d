package server

import (
	"context"
	"math"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

const artifactRangeSchema = `{"required": ["artifact", "offset", "length", "encoding", "content", "has_more"],
  "properties": {"artifact": ` + artifactRefSchema + `, "offset": {"type": "integer"}, "length": {"type": "integer"},
    "encoding": {"enum": ["text", "base64", "hex"]}, "content": {"type": "string"}, "has_more": {"type": "boolean"}}}`

type artifactReadParams struct {
	SessionID string `json:"session_id"`
	ID        string `json:"id"`
	Offset    uint64 `json:"offset"`
	Length    uint64 `json:"length"`
	Encoding  string `json:"encoding"`
}

// artifactRange is artifact_read's answer: one range of the artifact.
type artifactRange struct {
	artifacts.Range
	identity
}

func (s *Server) artifactReadTool() tool {
	return tool{
		name: "artifact_read",
		description: "Read a range of an artifact: at most 65,536 bytes from offset. encoding text needs the range to " +
			"be complete UTF-8 (move the boundaries or ask for hex or base64); has_more says whether bytes follow.",
		input: inputSchema{
			withRequired(sessionIDParam()),
			artifactIDParam(),
			{name: "offset", typ: "integer", min: bound(0), def: 0, desc: "First byte to read.", message: "offset/length must be a nonnegative integral u64"},
			{name: "length", typ: "integer", min: bound(0), max: bound(artifacts.MaxReadLength), def: artifacts.MaxReadLength, desc: "Bytes to read, at most 65536; clipped to the end."},
			{name: "encoding", typ: "string", enum: []string{"text", "base64", "hex"}, def: "text", desc: "text (UTF-8), base64 or hex."},
		},
		output:          artifactOutput(artifactRangeSchema),
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
			r, err := store.Read(ctx, sess.ID(), p.ID, offset, int64(p.Length), p.Encoding)
			if err != nil {
				return nil, err
			}
			return artifactRange{Range: r, identity: identify(sess)}, nil
		}),
	}
}
