package server

import (
	"context"

	"github.com/iota-uz/repl-mcp/repl"
)

type artifactDeleteParams struct {
	SessionID sessionArg    `json:"session_id"`
	ID        artifactIDArg `json:"id"`
}

// artifactDeleted is artifact_delete's answer.
type artifactDeleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
	identity
}

func (s *Server) artifactDeleteTool() tool {
	return tool{
		name:            "artifact_delete",
		description:     "Delete an artifact of the session now; later reads of its id fail.",
		output:          []variant{shape[artifactDeleted](), shape[toolFailure]()},
		annotations:     annotations(false, true, true, false),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(_ context.Context, sess *repl.Session, p artifactDeleteParams) (any, error) {
			store, err := s.store()
			if err != nil {
				return nil, err
			}
			if err := store.Delete(sess.ID(), string(p.ID)); err != nil {
				return nil, err
			}
			return artifactDeleted{ID: string(p.ID), Deleted: true, identity: identify(sess)}, nil
		}),
	}
}

// modelText names the artifact deleted.
func (v artifactDeleted) modelText() reply { return reply{body: "Deleted artifact " + v.ID + "."} }
