package server

import (
	"context"
	"encoding/json"

	"github.com/iota-uz/repl-mcp/repl"
)

// ArtifactOps answers the artifact tools' requests as ops of the artifact store
// (package cellops implements it).
type ArtifactOps interface {
	Serve(ctx context.Context, rpc repl.RPC) (json.RawMessage, error)
}

// maxReadBytes bounds one artifact_read (docs/contract.md §9.2).
const maxReadBytes = 65536

// artifactParams are the params of every artifact op; each op reads its own.
type artifactParams struct {
	Format    string                     `json:"format"`
	UploadID  string                     `json:"upload_id"`
	Offset    int64                      `json:"offset"`
	Length    *int64                     `json:"length"`
	Data      string                     `json:"data"`
	Path      string                     `json:"path"`
	ID        string                     `json:"id"`
	Encoding  string                     `json:"encoding"`
	Overwrite bool                       `json:"overwrite"`
	Server    string                     `json:"server"`
	Tool      string                     `json:"tool"`
	Argument  string                     `json:"argument"`
	Arguments map[string]json.RawMessage `json:"arguments"`
}
