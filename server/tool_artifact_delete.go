package server

import "context"

const artifactDeletedSchema = `{"required": ["id", "deleted"], "properties": {"id": {"type": "string"}, "deleted": {"type": "boolean"}}}`

func (s *Server) artifactDeleteTool() tool {
	return tool{
		name:            "artifact_delete",
		description:     "Delete an artifact of the session now; later reads of its id fail.",
		input:           inputSchema{withRequired(sessionIDParam()), artifactIDParam()},
		output:          artifactOutput(artifactDeletedSchema),
		annotations:     annotations(false, true, true, false),
		routed:          true,
		sessionRequired: true,
		handle: func(ctx context.Context, call *toolCall) any {
			return s.artifactCall(ctx, call, "artifact.delete", "")
		},
	}
}
