package cellops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/iota-uz/repl-mcp/artifacts"
	"github.com/iota-uz/repl-mcp/broker"
	"github.com/iota-uz/repl-mcp/notebook"
	"github.com/iota-uz/repl-mcp/repl"
)

// Config is what the ops are answered with. Either may be nil: ops that need it
// then fail with a message saying so.
type Config struct {
	Brokers *broker.Set
	Store   *artifacts.Store
	// Notebooks answers repl_export; nil refuses it.
	Notebooks *notebook.Keeper
}

// Ops answers cell code's ops; it is safe for concurrent use.
type Ops struct {
	brokers   *broker.Set
	store     *artifacts.Store
	notebooks *notebook.Keeper
	table     map[string]opFunc

	mu       sync.Mutex
	sessions map[string]*broker.Broker // the project broker each open session holds
}

// opFunc answers one op: its params are the worker's JSON, its result is encoded
// for the worker.
type opFunc func(ctx context.Context, rpc repl.RPC) (json.RawMessage, error)

// Messages of the op layer itself.
const (
	msgUnknownOp   = "Unknown MCP bridge operation"
	msgBadParams   = "Operation parameters are malformed: %s"
	msgNoBroker    = "No MCP broker serves this session (the server is shutting down); cell code cannot call other MCP servers"
	msgNoStore     = "No artifact store serves this session; cell code cannot create or read artifacts"
	msgNoForwarder = "No MCP broker serves this session; artifacts cannot be forwarded"
	msgNoNotebooks = "No notebook record is kept by this server; repl_export cannot write one"
)

// New makes the ops over cfg's broker Set and artifact store.
func New(cfg Config) *Ops {
	o := &Ops{brokers: cfg.Brokers, store: cfg.Store, notebooks: cfg.Notebooks, sessions: map[string]*broker.Broker{}}
	o.table = map[string]opFunc{}
	for name, f := range o.brokerOps() {
		o.table[name] = f
	}
	for name, f := range o.artifactOps() {
		o.table[name] = f
	}
	o.table["notebook.export"] = o.exportNotebook
	return o
}

var _ repl.Services = (*Ops)(nil)

// SessionOpened registers the session with the store and acquires its project's
// broker.
func (o *Ops) SessionOpened(sessionID, project string) {
	if o.store != nil {
		o.store.Register(sessionID)
	}
	if o.brokers == nil {
		return
	}
	if b := o.brokers.Acquire(sessionID, project); b != nil {
		o.mu.Lock()
		o.sessions[sessionID] = b
		o.mu.Unlock()
	}
}

// SessionClosed releases the session's broker (a project's last session shuts its
// broker down) and drops its artifacts.
func (o *Ops) SessionClosed(sessionID, project string) {
	o.mu.Lock()
	delete(o.sessions, sessionID)
	o.mu.Unlock()
	if o.brokers != nil {
		o.brokers.Release(sessionID, project)
	}
	if o.store != nil {
		o.store.DropOwner(sessionID)
	}
}

// RunStarted opens the run to uploads.
func (o *Ops) RunStarted(sessionID, runID string) {
	if o.store != nil {
		o.store.StartRun(sessionID, runID)
	}
}

// RunEnded aborts the run's unfinished uploads.
func (o *Ops) RunEnded(sessionID, runID string) {
	if o.store != nil {
		o.store.EndRun(sessionID, runID)
	}
}

// Serve answers one op of the session's active run.
func (o *Ops) Serve(ctx context.Context, rpc repl.RPC) (json.RawMessage, error) {
	f, ok := o.table[rpc.Op]
	if !ok {
		return nil, errors.New(msgUnknownOp)
	}
	return f(ctx, rpc)
}

// broker is the project broker the session holds, or nil.
func (o *Ops) broker(sessionID string) *broker.Broker {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sessions[sessionID]
}

// decode reads an op's params into a typed request.
func decode(raw json.RawMessage, into any) error {
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf(msgBadParams, err)
	}
	return nil
}

// encode is an op's result for the worker. A result that is encoded already (a
// downstream envelope of up to 900 KB) passes as it is.
func encode(v any, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(v)
}

// exportParams are repl_export's: an absolute path (the worker resolves it).
type exportParams struct {
	Path      string `json:"path"`
	Overwrite bool   `json:"overwrite"`
}

// exportNotebook answers repl_export: the session's notebook of the cells finished
// so far, written under artifact_save's path rules.
func (o *Ops) exportNotebook(ctx context.Context, rpc repl.RPC) (json.RawMessage, error) {
	if o.notebooks == nil {
		return nil, errors.New(msgNoNotebooks)
	}
	var p exportParams
	if err := decode(rpc.Params, &p); err != nil {
		return nil, err
	}
	return encode(o.notebooks.Export(ctx, rpc.SessionID, rpc.SessionName, p.Path, p.Overwrite))
}
