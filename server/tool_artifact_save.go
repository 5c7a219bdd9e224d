package server

import "context"

const artifactSavedSchema = `{"required": ["artifact", "saved", "path"],
  "properties": {"artifact": ` + artifactRefSchema + `, "saved": {"type": "boolean"}, "path": {"type": "string"}}}`

func (s *Server) artifactSaveTool() tool {
	return tool{
		name: "artifact_save",
		description: "Save an artifact to a file, after checking its sha256: written beside the target and moved " +
			"into place, so the target is never half-written. An existing target is kept unless overwrite=true. " +
			"Relative paths are against the session's project; the file is created 0600.",
		input: inputSchema{
			withRequired(sessionIDParam()),
			artifactIDParam(),
			{name: "path", typ: "string", required: true, minLength: 1, maxLength: 4096, desc: "Destination file; relative to the session's project."},
			{name: "overwrite", typ: "boolean", def: false, desc: "Replace an existing file."},
		},
		output:          artifactOutput(artifactSavedSchema),
		annotations:     annotations(false, true, false, false),
		routed:          true,
		sessionRequired: true,
		handle: func(ctx context.Context, call *toolCall) any {
			return s.artifactCall(ctx, call, "artifact.save", "")
		},
	}
}
