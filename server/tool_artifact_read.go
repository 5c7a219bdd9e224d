package server

import "context"

const artifactRangeSchema = `{"required": ["artifact", "offset", "length", "encoding", "content", "has_more"],
  "properties": {"artifact": ` + artifactRefSchema + `, "offset": {"type": "integer"}, "length": {"type": "integer"},
    "encoding": {"enum": ["text", "base64", "hex"]}, "content": {"type": "string"}, "has_more": {"type": "boolean"}}}`

func (s *Server) artifactReadTool() tool {
	return tool{
		name: "artifact_read",
		description: "Read a range of an artifact: at most 65,536 bytes from offset. encoding text needs the range to " +
			"be complete UTF-8 (move the boundaries or ask for hex or base64); has_more says whether bytes follow.",
		input: inputSchema{
			withRequired(sessionIDParam()),
			artifactIDParam(),
			{name: "offset", typ: "integer", min: bound(0), def: 0, desc: "First byte to read.", message: "offset/length must be a nonnegative integral u64"},
			{name: "length", typ: "integer", min: bound(0), max: bound(maxReadBytes), def: maxReadBytes, desc: "Bytes to read, at most 65536; clipped to the end."},
			{name: "encoding", typ: "string", enum: []string{"text", "base64", "hex"}, def: "text", desc: "text (UTF-8), base64 or hex."},
		},
		output:          artifactOutput(artifactRangeSchema),
		annotations:     annotations(true, false, true, false),
		routed:          true,
		sessionRequired: true,
		handle: func(ctx context.Context, call *toolCall) any {
			return s.artifactCall(ctx, call, "artifact.read", "")
		},
	}
}
