package server

import (
	"context"
	"fmt"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

type artifactSaveParams struct {
	SessionID sessionArg    `json:"session_id"`
	ID        artifactIDArg `json:"id"`
	Path      string        `json:"path" schema:"minLength=1,maxLength=4096" jsonschema:"Destination file; relative to the session's project."`
	Overwrite bool          `json:"overwrite,omitempty" schema:"default=false" jsonschema:"Replace an existing file."`
}

// artifactSaved is artifact_save's answer.
type artifactSaved struct {
	savedArtifact
	identity
}

// savedArtifact is artifacts.Saved under a name of its own: embedded as Saved, it
// would hide its own field Saved from reflect.VisibleFields, and so from the schema,
// though encoding/json writes it.
type savedArtifact = artifacts.Saved

func (s *Server) artifactSaveTool() tool {
	return tool{
		name: "artifact_save",
		description: "Save an artifact to a file, after checking its sha256: written beside the target and moved " +
			"into place, so the target is never half-written. An existing target is kept unless overwrite=true. " +
			"Relative paths are against the session's project; the file is created 0600.",
		output:          []variant{shape[artifactSaved](), shape[toolFailure]()},
		annotations:     annotations(false, true, false, false),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p artifactSaveParams) (any, error) {
			store, err := s.store()
			if err != nil {
				return nil, err
			}
			saved, err := store.Save(ctx, sess.ID(), string(p.ID), sess.ProjectPath(p.Path), p.Overwrite)
			if err != nil {
				return nil, err
			}
			return artifactSaved{savedArtifact: saved, identity: identify(sess)}, nil
		}),
	}
}

// modelText says where the artifact was saved.
func (v artifactSaved) modelText() reply {
	return reply{body: fmt.Sprintf("Saved %s to %s (sha256 checked).", refText(v.Artifact), v.Path)}
}
