package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/iota-uz/repl-mcp/repl"
)

type sessionExportParams struct {
	SessionID sessionArg `json:"session_id"`
	Path      string     `json:"path" schema:"minLength=1,maxLength=4096" jsonschema:"Destination .ipynb file; relative to the session's project. Its directory must exist."`
	Overwrite bool       `json:"overwrite,omitempty" schema:"default=false" jsonschema:"Replace an existing file."`
}

// sessionExported is python_session_export's answer.
type sessionExported struct {
	Exported bool   `json:"exported"`
	Path     string `json:"path"`
	Cells    int    `json:"cells"`
	Dropped  int    `json:"dropped"`
	Bytes    int64  `json:"bytes"`
	identity
}

var errNoNotebooks = errors.New("No notebook record is kept by this server; sessions cannot be exported")

func (s *Server) pythonSessionExportTool() tool {
	return tool{
		name: "python_session_export",
		description: "Export a session's cells as a Jupyter notebook (.ipynb, nbformat 4.5) a person can open, " +
			"review and re-run: code in order with its output, values, figures and errors, and a note where " +
			"the worker was reset or lost its variables. Written beside the target and moved into place; an " +
			"existing file is kept unless overwrite=true. Relative paths are against the session's project.",
		output:          []variant{shape[sessionExported](), shape[toolFailure]("exported")},
		annotations:     annotations(false, true, false, false),
		routed:          true,
		sessionRequired: true,
		handler: handle(func(ctx context.Context, sess *repl.Session, p sessionExportParams) (any, error) {
			if s.notebooks == nil {
				return nil, errNoNotebooks
			}
			h := sess.Health()
			out, err := s.notebooks.Export(ctx, h.SessionID, h.Name, sess.ProjectPath(p.Path), p.Overwrite)
			if err != nil {
				return nil, err
			}
			return sessionExported{Exported: true, Path: out.Path, Cells: out.Cells, Dropped: out.Dropped,
				Bytes: out.Bytes, identity: identify(sess)}, nil
		}),
	}
}

// text is the export for the model.
func (e sessionExported) text() string {
	msg := fmt.Sprintf("Exported %d cells of session %s to %s (%d bytes).", e.Cells, e.SessionID, e.Path, e.Bytes)
	if e.Dropped > 0 {
		msg += fmt.Sprintf(" %d older cells were no longer kept.", e.Dropped)
	}
	return msg
}

// modelText is text.
func (e sessionExported) modelText() reply { return reply{body: e.text()} }
