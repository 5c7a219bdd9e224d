package cellops

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/repl"
)

// Limits of the artifact ops (docs/contract.md §9.2).
const (
	maxReadBytes    = 65536 // one range read
	msgChunkTooLong = "Artifact upload chunk exceeds 256 KiB; send smaller appends"
)

// The params of the artifact ops, as the worker's helpers send them.
type (
	uploadParams struct {
		Format   string `json:"format"`
		UploadID string `json:"upload_id"`
	}
	// appendParams: the chunk is the rpc's Data, not a param.
	appendParams struct {
		UploadID string `json:"upload_id"`
		Offset   int64  `json:"offset"`
	}
	createParams struct {
		Path   string `json:"path"`
		Format string `json:"format"`
	}
	readParams struct {
		ID       string `json:"id"`
		Offset   int64  `json:"offset"`
		Length   *int64 `json:"length"` // nil: a whole range
		Encoding string `json:"encoding"`
	}
	idParams struct {
		ID string `json:"id"`
	}
	saveParams struct {
		ID        string `json:"id"`
		Path      string `json:"path"`
		Overwrite bool   `json:"overwrite"`
	}
	forwardParams struct {
		ID        string                     `json:"id"`
		Server    string                     `json:"server"`
		Tool      string                     `json:"tool"`
		Argument  string                     `json:"argument"`
		Format    string                     `json:"format"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
)

// artifactOps are the artifact helpers' ops, each answered by the store for the
// session that sent it (its owner).
func (o *Ops) artifactOps() map[string]opFunc {
	return map[string]opFunc{
		"artifact.begin":   withStore(o, o.begin),
		"artifact.append":  withStore(o, o.appendChunk),
		"artifact.commit":  withStore(o, o.commit),
		"artifact.abort":   withStore(o, o.abort),
		"artifact.create":  withStore(o, o.create),
		"artifact.read":    withStore(o, o.read),
		"artifact.save":    withStore(o, o.save),
		"artifact.delete":  withStore(o, o.remove),
		"artifact.forward": withStore(o, o.forward),
	}
}

// withStore decodes an op's params into P and answers it, or says that no store
// serves the session.
func withStore[P any](o *Ops, f func(ctx context.Context, rpc repl.RPC, p P) (any, error)) opFunc {
	return func(ctx context.Context, rpc repl.RPC) (json.RawMessage, error) {
		if o.store == nil {
			return nil, errors.New(msgNoStore)
		}
		var p P
		if err := decode(rpc.Params, &p); err != nil {
			return nil, err
		}
		return encode(f(ctx, rpc, p))
	}
}

func (o *Ops) begin(_ context.Context, rpc repl.RPC, p uploadParams) (any, error) {
	f, err := artifacts.ParseFormat(p.Format)
	if err != nil {
		return nil, err
	}
	return o.store.Begin(rpc.SessionID, rpc.RunID, f)
}

func (o *Ops) appendChunk(_ context.Context, rpc repl.RPC, p appendParams) (any, error) {
	if len(rpc.Data) > artifacts.ChunkBytes {
		return nil, errors.New(msgChunkTooLong)
	}
	size, err := o.store.Append(rpc.SessionID, p.UploadID, p.Offset, rpc.Data)
	if err != nil {
		return nil, err
	}
	return map[string]any{"upload_id": p.UploadID, "size": size}, nil
}

func (o *Ops) commit(ctx context.Context, rpc repl.RPC, p uploadParams) (any, error) {
	return o.store.Commit(ctx, rpc.SessionID, p.UploadID)
}

func (o *Ops) abort(_ context.Context, rpc repl.RPC, p uploadParams) (any, error) {
	if err := o.store.Abort(rpc.SessionID, p.UploadID); err != nil {
		return nil, err
	}
	return map[string]any{"upload_id": p.UploadID, "aborted": true}, nil
}

func (o *Ops) create(ctx context.Context, rpc repl.RPC, p createParams) (any, error) {
	f, err := artifacts.ParseFormat(p.Format)
	if err != nil {
		return nil, err
	}
	return o.store.Create(ctx, rpc.SessionID, p.Path, f)
}

func (o *Ops) read(ctx context.Context, rpc repl.RPC, p readParams) (any, error) {
	length := int64(maxReadBytes)
	if p.Length != nil {
		length = *p.Length
	}
	encoding := p.Encoding
	if encoding == "" {
		encoding = "text"
	}
	return o.store.Read(ctx, rpc.SessionID, p.ID, p.Offset, length, encoding)
}

func (o *Ops) save(ctx context.Context, rpc repl.RPC, p saveParams) (any, error) {
	return o.store.Save(ctx, rpc.SessionID, p.ID, p.Path, p.Overwrite)
}

func (o *Ops) remove(_ context.Context, rpc repl.RPC, p idParams) (any, error) {
	if err := o.store.Delete(rpc.SessionID, p.ID); err != nil {
		return nil, err
	}
	return map[string]any{"id": p.ID, "deleted": true}, nil
}

// forward places an artifact as one argument of a downstream call, through the
// session's broker: its allowlist, schema check and journal apply as to any call.
func (o *Ops) forward(ctx context.Context, rpc repl.RPC, p forwardParams) (any, error) {
	b := o.broker(rpc.SessionID)
	if b == nil {
		return nil, errors.New(msgNoForwarder)
	}
	req := artifacts.ForwardRequest{ID: p.ID, Format: p.Format, Argument: p.Argument, Arguments: p.Arguments}
	// The downstream envelope, already encoded: encode passes it on as it is.
	return o.store.Forward(ctx, rpc.SessionID, req, func(ctx context.Context, arguments json.RawMessage) (json.RawMessage, error) {
		return b.Call(ctx, broker.CallRequest{SessionID: rpc.SessionID, Project: rpc.Project, RunID: rpc.RunID,
			Server: p.Server, Tool: p.Tool, Arguments: arguments, Timeout: broker.DefaultCallTimeout})
	})
}

// msgNoTextStore is why a result's complete text could not be kept.
const msgNoTextStore = "this result has no session's artifact store to keep it in"

// KeepText keeps text as a text artifact of the session (repl.Services): kept, while
// the store still holds it, else a new artifact. The store imports files, checking
// them as it copies; the temporary file is private and gone when this returns.
func (o *Ops) KeepText(ctx context.Context, sessionID, text string, kept *artifacts.Ref) (artifacts.Ref, error) {
	if o.store == nil {
		return artifacts.Ref{}, errors.New(msgNoTextStore)
	}
	if kept != nil && kept.ID != "" {
		if _, err := o.store.Read(ctx, sessionID, kept.ID, 0, 0, "hex"); err == nil {
			return *kept, nil
		}
	}
	f, err := os.CreateTemp("", "repl-mcp-text-*")
	if err != nil {
		return artifacts.Ref{}, err
	}
	path, _ := filepath.Abs(f.Name())
	defer os.Remove(path)
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return artifacts.Ref{}, err
	}
	return o.store.Create(ctx, sessionID, path, artifacts.FormatText)
}
