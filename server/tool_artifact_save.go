package server

import (
	"context"
	"fmt"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

const artifactSavedSchema = `{"required": ["artifact", "saved", "path"],
  "properties": {"artifact": ` + artifactRefSchema + `, "saved": {"type": "boolean"}, "path": {"type": "string"}}}`

type artifactSaveParams struct {
	SessionID string `json:"session_id"`
	ID        string `json:"id"`
	Path      string `json:"path"`
	Overwrite bool   `json:"overwrite"`
}

// artifactSaved is artifact_save's answer.
type artifactSaved struct {
	artifacts.Saved
	identity
}

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
		handler: handle(func(ctx context.Context, sess *repl.Session, p artifactSaveParams) (any, error) {
			store, err := s.store()
			if err != nil {
				return nil, err
			}
			saved, err := store.Save(ctx, sess.ID(), p.ID, sess.ProjectPath(p.Path), p.Overwrite)
			if err != nil {
				return nil, err
			}
			return artifactSaved{Saved: saved, identity: identify(sess)}, nil
		}),
	}
}

// modelText says where the artifact was saved.
func (v artifactSaved) modelText() reply {
	return reply{body: fmt.Sprintf("Saved %s to %s (sha256 checked).", refText(v.Artifact), v.Path)}
}
