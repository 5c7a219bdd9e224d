package server

import (
	"context"
	"fmt"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/repl"
)

type artifactCreateParams struct {
	SessionID sessionArg `json:"session_id"`
	Path      string     `json:"path" schema:"minLength=1,maxLength=4096" jsonschema:"The file to import; relative to the session's project."`
	Format    string     `json:"format" schema:"enum=json|text|binary" jsonschema:"json, text or binary."`
}

// artifactCreated is artifact_create's answer: the new artifact's reference.
type artifactCreated struct {
	artifacts.Ref
	identity
}

func (s *Server) artifactCreateTool() tool {
	return tool{
		name: "artifact_create",
		description: "Import a file into the session's artifact store (copied; the source may change or go away " +
			"afterwards): json and text must be UTF-8 (json must parse), binary is anything. Relative paths are " +
			"against the session's project. At most 16 MiB each, 64 artifacts and 64 MiB in all, oldest evicted " +
			"first; artifacts outlive worker resets and go away with their session. Read them with artifact_read.",
		output:          []variant{shape[artifactCreated](), shape[toolFailure]()},
		annotations:     annotations(false, false, false, false),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p artifactCreateParams) (any, error) {
			store, err := s.store()
			if err != nil {
				return nil, err
			}
			format, err := artifacts.ParseFormat(p.Format)
			if err != nil {
				return nil, err
			}
			ref, err := store.Create(ctx, sess.ID(), sess.ProjectPath(p.Path), format)
			if err != nil {
				return nil, err
			}
			return artifactCreated{Ref: ref, identity: identify(sess)}, nil
		}),
	}
}

// modelText names the artifact made.
func (v artifactCreated) modelText() reply {
	return reply{body: fmt.Sprintf("Created %s: %s, sha256 %s; session %s. Read it with artifact_read.",
		refText(v.Ref), v.Format, v.SHA256, v.SessionID)}
}
