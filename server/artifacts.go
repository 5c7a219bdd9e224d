package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// Artifacts lets the sessions of a repl.Manager reach the artifact store: the
// upload, import, read, save, delete and forward ops of cell code, and the session
// and run lifetimes that bind uploads. Forwarding goes through the session's
// project broker in brokers.
func Artifacts(store *artifacts.Store, brokers *broker.Set) repl.Artifacts {
	return artifactOps{store: store, brokers: brokers}
}

type artifactOps struct {
	store   *artifacts.Store
	brokers *broker.Set
}

func (a artifactOps) Register(sessionID string)        { a.store.Register(sessionID) }
func (a artifactOps) DropSession(sessionID string)     { a.store.DropOwner(sessionID) }
func (a artifactOps) StartRun(sessionID, runID string) { a.store.StartRun(sessionID, runID) }
func (a artifactOps) EndRun(sessionID, runID string)   { a.store.EndRun(sessionID, runID) }

// Limits of the upload ops (contract 9.2).
const (
	maxChunkBase64  = 43692 // base64 of one 32 KiB chunk
	maxReadBytes    = 65536 // one range read
	forwardTimeout  = 120.0 // seconds, the broker's default call timeout
	msgUnknownOp    = "Unknown artifact operation"
	msgBadOpParams  = "Artifact operation parameters are malformed: %s"
	msgNoBroker     = "No MCP broker serves this session; artifacts cannot be forwarded"
	msgChunkTooLong = "Artifact upload chunk exceeds 32 KiB; send smaller appends"
)

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

// Serve answers one artifact op of cell code.
func (a artifactOps) Serve(ctx context.Context, req repl.BridgeRequest) (json.RawMessage, error) {
	var p artifactParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, fmt.Errorf(msgBadOpParams, err)
	}
	owner := req.SessionID
	var (
		result any
		err    error
	)
	switch req.Op {
	case "artifact.begin":
		result, err = a.begin(owner, req.RunID, p.Format)
	case "artifact.append":
		result, err = a.appendChunk(owner, p)
	case "artifact.commit":
		result, err = a.store.Commit(ctx, owner, p.UploadID)
	case "artifact.abort":
		err = a.store.Abort(owner, p.UploadID)
		result = map[string]any{"upload_id": p.UploadID, "aborted": true}
	case "artifact.create":
		result, err = a.create(ctx, owner, p.Path, p.Format)
	case "artifact.read":
		result, err = a.read(ctx, owner, p)
	case "artifact.save":
		result, err = a.store.Save(ctx, owner, p.ID, p.Path, p.Overwrite)
	case "artifact.delete":
		result, err = a.remove(owner, p.ID)
	case "artifact.forward":
		return a.forward(ctx, req.SessionID, req.Project, req.RunID, p)
	default:
		return nil, errors.New(msgUnknownOp)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(result)
}

func (a artifactOps) begin(owner, run, format string) (any, error) {
	f, err := artifacts.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	return a.store.Begin(owner, run, f)
}

func (a artifactOps) appendChunk(owner string, p artifactParams) (any, error) {
	if len(p.Data) > maxChunkBase64 {
		return nil, errors.New(msgChunkTooLong)
	}
	data, err := base64.StdEncoding.DecodeString(p.Data)
	if err != nil {
		return nil, fmt.Errorf(msgBadOpParams, "data is not standard base64")
	}
	size, err := a.store.Append(owner, p.UploadID, p.Offset, data)
	if err != nil {
		return nil, err
	}
	return map[string]any{"upload_id": p.UploadID, "size": size}, nil
}

func (a artifactOps) create(ctx context.Context, owner, path, format string) (any, error) {
	f, err := artifacts.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	return a.store.Create(ctx, owner, path, f)
}

func (a artifactOps) read(ctx context.Context, owner string, p artifactParams) (any, error) {
	length := int64(maxReadBytes)
	if p.Length != nil {
		length = *p.Length
	}
	encoding := p.Encoding
	if encoding == "" {
		encoding = "text"
	}
	return a.store.Read(ctx, owner, p.ID, p.Offset, length, encoding)
}

func (a artifactOps) remove(owner, id string) (any, error) {
	if err := a.store.Delete(owner, id); err != nil {
		return nil, err
	}
	return map[string]any{"id": id, "deleted": true}, nil
}

// forward places an artifact as one argument of a downstream call, through the
// session's broker: its allowlist, schema check and journal apply as to any call.
func (a artifactOps) forward(ctx context.Context, sessionID, project, runID string, p artifactParams) (json.RawMessage, error) {
	format := p.Format
	if format == "" {
		format = "json"
	}
	value, err := a.store.ForwardValue(ctx, sessionID, p.ID, format)
	if err != nil {
		return nil, err
	}
	if a.brokers == nil {
		return nil, errors.New(msgNoBroker)
	}
	b := a.brokers.Acquire(sessionID, project) // the session holds it already; this only finds it
	if b == nil {
		return nil, errors.New(msgNoBroker)
	}
	args := make(map[string]json.RawMessage, len(p.Arguments)+1)
	for k, v := range p.Arguments {
		args[k] = v
	}
	args[p.Argument] = value
	arguments, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return b.Call(ctx, broker.CallRequest{SessionID: sessionID, Project: project, RunID: runID,
		Server: p.Server, Tool: p.Tool, Arguments: arguments, Timeout: forwardTimeout * time.Second})
}
