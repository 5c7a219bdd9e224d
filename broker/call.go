package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/iota-uz/repl-mcp/broker/argcheck"
	"github.com/iota-uz/repl-mcp/broker/journal"
	"github.com/iota-uz/repl-mcp/broker/oauth"
	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallRequest is one tools/call from cell code, with the provenance the journal
// records.
type CallRequest struct {
	SessionID string
	Project   string
	RunID     string
	Server    string
	Tool      string
	// Arguments is the tool's arguments, a JSON object; empty or null means {}.
	Arguments json.RawMessage
	// Timeout bounds the whole call, connect included: MinTimeout..MaxTimeout.
	Timeout time.Duration
}

// check validates the request's own fields, in the order the cell's errors
// follow: server, tool, arguments, timeout. It returns the arguments to send.
func (r CallRequest) check() (json.RawMessage, error) {
	if err := CheckServerName(r.Server); err != nil {
		return nil, err
	}
	if err := checkToolName(r.Tool); err != nil {
		return nil, err
	}
	args := bytes.TrimSpace(r.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' {
		return nil, errors.New(msgNotObject)
	}
	return args, checkTimeout(r.Timeout)
}

// Call runs one tools/call and returns the complete CallToolResult envelope.
// Every check that can refuse comes before the journal records the dispatch,
// and the dispatch is on record before the request leaves. Errors are messages
// for the cell: they say whether the request reached the server and that
// nothing was retried.
func (b *Broker) Call(ctx context.Context, req CallRequest) (json.RawMessage, error) {
	args, err := req.check()
	if err != nil {
		return nil, err
	}
	reg, err := b.ready(true)
	if err != nil {
		return nil, err
	}
	e, err := b.entry(reg, req.Server)
	if err != nil {
		return nil, err
	}
	if !e.ToolAllowed(req.Tool) {
		return nil, errors.New(msgToolDenied)
	}
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	t, peer, release, err := b.slotAndPeer(ctx, e)
	if err != nil {
		return nil, err
	}
	defer release()
	tool, err := b.findTool(ctx, t, peer, e, req.Tool)
	if err != nil {
		return nil, err
	}
	if err := b.opts.Validator.CheckSchema(ctx, tool.check, args); err != nil {
		return nil, validationError(ctx, err)
	}
	id, err := b.opts.Journal.Dispatch(ctx, journal.CallMeta{SessionID: req.SessionID, Project: req.Project, RunID: req.RunID, Server: req.Server, Tool: req.Tool})
	if err != nil {
		if ctx.Err() != nil {
			return nil, connectCtxErr(ctx)
		}
		return nil, err
	}
	res, err := peer.session.CallTool(ctx, &mcp.CallToolParams{Name: req.Tool, Arguments: args})
	if err != nil {
		b.invalidateOnTransportError(ctx, t, peer, err)
		return nil, b.callFailed(ctx, id, err)
	}
	return b.deliver(id, res)
}

// slotAndPeer takes one of the broker's request slots, then the live peer of e's
// transport; release gives both back.
func (b *Broker) slotAndPeer(ctx context.Context, e registry.Entry) (*transport, *peer, func(), error) {
	freeSlot, err := b.acquire(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	t, p, freePeer, err := b.connect(ctx, e)
	if err != nil {
		freeSlot()
		return nil, nil, nil, err
	}
	return t, p, func() { freePeer(); freeSlot() }, nil
}

// findTool looks the tool up in the transport's catalogue, listing it if needed.
func (b *Broker) findTool(ctx context.Context, t *transport, p *peer, e registry.Entry, name string) (catalogueTool, error) {
	cat, err := b.catalogue(ctx, t, p)
	if err != nil {
		return catalogueTool{}, err
	}
	i, ok := cat.index[name]
	if !ok || !e.ToolAllowed(name) {
		return catalogueTool{}, errors.New(msgUnknownTool)
	}
	if cat.tools[i].schema == nil {
		return catalogueTool{}, errors.New(msgNoInputSchema)
	}
	return cat.tools[i], nil
}

// validationError maps a Validator error to the cell's message.
func validationError(ctx context.Context, err error) error {
	var argErr *argcheck.ArgumentsError
	switch {
	case errors.As(err, &argErr):
		return err
	case ctx.Err() != nil:
		return connectCtxErr(ctx)
	case errors.Is(err, argcheck.ErrSchemaRejected):
		return fmt.Errorf("the tool's inputSchema cannot be used, so nothing was sent: %w", err)
	default:
		return err
	}
}

// callFailed records an unknown outcome and says why. A cancelled call has
// already sent notifications/cancelled downstream (go-sdk does on ctx end).
func (b *Broker) callFailed(ctx context.Context, id string, err error) error {
	msg := msgProtocolError
	var rpcErr *jsonrpc.Error
	var oauthErr *oauth.Error
	switch {
	case errors.Is(err, oauth.ErrCredentialsRequired) && errors.As(err, &oauthErr):
		// The token could not be renewed: the request never left. The journal still
		// says outcome_unknown, its most careful status.
		msg = oauthErr.Error() + "; the request was not sent"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = msgDeadline
	case ctx.Err() != nil:
		msg = msgCancelled
	case errors.As(err, &rpcErr) && rpcErr.Code == codeReplyTooDeep:
		msg = rpcErr.Message
	case isProtocolError(err, &rpcErr):
		msg = fmt.Sprintf("%s (downstream JSON-RPC error %d: %s)", msgProtocolError, rpcErr.Code, safeText(rpcErr.Message, 300))
	}
	if ferr := b.opts.Journal.Finish(id, journal.StatusOutcomeUnknown); errors.Is(ferr, journal.ErrPersist) {
		return errors.New(msgJournalUnknown)
	}
	return errors.New(msg)
}

// deliver records the terminal status and returns the complete envelope, unless
// it is over the delivery budget: then the cell learns the call's journal id and
// status instead, so that it does not repeat a write to see the output.
func (b *Broker) deliver(id string, res *mcp.CallToolResult) (json.RawMessage, error) {
	status := journal.StatusCompleted
	if res.IsError {
		status = journal.StatusToolError
	}
	ferr := b.opts.Journal.Finish(id, status)
	if errors.Is(ferr, journal.ErrPersist) {
		return nil, errors.New(msgJournalDone)
	}
	envelope, err := envelopeJSON(res)
	if err != nil {
		return nil, fmt.Errorf("MCP result could not be encoded; call %s is recorded as %s, do not retry blindly: %w", id, status, err)
	}
	if len(envelope) > MaxResultBytes {
		return nil, fmt.Errorf(msgDelivery, len(envelope), MaxResultBytes, id, status)
	}
	return envelope, nil
}

// envelopeJSON encodes the CallToolResult with isError always present. go-sdk
// omits a false isError; appending it to the encoded object spares decoding and
// encoding up to 900,000 bytes again.
func envelopeJSON(res *mcp.CallToolResult) (json.RawMessage, error) {
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	data, err := json.Marshal(res)
	if err != nil || res.IsError {
		return data, err
	}
	end := bytes.LastIndexByte(data, '}')
	if end < 1 {
		return nil, fmt.Errorf("CallToolResult encoded as %.20q, not an object", data)
	}
	out := make([]byte, 0, len(data)+16)
	out = append(out, data[:end]...)
	if len(bytes.TrimSpace(data[1:end])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"isError":false}`...)
	return out, nil
}

// Listing is a server's tools as ListTools returns them.
type Listing struct {
	Tools []json.RawMessage // the definitions the allowlist admits, complete schemas included
	// Fresh is how much longer the broker serves this catalogue from its cache
	// (at most 15 s): a client that keeps the listing that long reads nothing the
	// broker would not give it anyway.
	Fresh time.Duration
}

// ListTools returns the tool definitions (complete schemas) of server that its
// allowlist admits, listing the catalogue when the cached one is older than 15 s.
// timeout (MinTimeout..MaxTimeout) bounds the listing, connect included.
func (b *Broker) ListTools(ctx context.Context, server string, timeout time.Duration) (Listing, error) {
	if err := CheckServerName(server); err != nil {
		return Listing{}, err
	}
	if err := checkTimeout(timeout); err != nil {
		return Listing{}, err
	}
	reg, err := b.ready(true)
	if err != nil {
		return Listing{}, err
	}
	e, err := b.entry(reg, server)
	if err != nil {
		return Listing{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t, p, release, err := b.slotAndPeer(ctx, e)
	if err != nil {
		return Listing{}, err
	}
	defer release()
	cat, err := b.catalogue(ctx, t, p)
	if err != nil {
		return Listing{}, err
	}
	tools, err := cat.view(e)
	if err != nil {
		return Listing{}, err
	}
	return Listing{Tools: tools, Fresh: max(0, catalogueTTL-time.Since(cat.fetched))}, nil
}

// catalogue is a server's complete tool list as last fetched.
type catalogue struct {
	fetched time.Time
	tools   []catalogueTool // listing order
	index   map[string]int
}

type catalogueTool struct {
	name   string
	def    json.RawMessage // the definition as listed, complete schemas included
	schema json.RawMessage // its inputSchema; nil when the server gave none
	// check is schema as the Validator takes it, kept with the catalogue so that
	// calls to the tool hash the schema once, not on every call.
	check *argcheck.Schema
}

// view returns the tools e's allowlist admits, within the 1 MiB catalogue budget.
func (c *catalogue) view(e registry.Entry) ([]json.RawMessage, error) {
	tools := []json.RawMessage{}
	size := 0
	for _, t := range c.tools {
		if !e.ToolAllowed(t.name) {
			continue
		}
		size += len(t.def) + 1
		if size > maxCatalogueBytes {
			return nil, errors.New(msgCatalogueBytes)
		}
		tools = append(tools, t.def)
	}
	return tools, nil
}

// catalogue returns the transport's catalogue, listing it when the cached one is
// missing or older than 15 s. Concurrent callers of one peer share one listing,
// run under the context of the caller that started it; when that caller gives up,
// the others list again under their own. A failure is an error, never an empty
// listing.
func (b *Broker) catalogue(ctx context.Context, t *transport, p *peer) (*catalogue, error) {
	key := fmt.Sprintf("%s/%p", t.fp, p)
	for {
		b.mu.Lock()
		cat := t.cat
		b.mu.Unlock()
		if cat != nil && time.Since(cat.fetched) < catalogueTTL {
			return cat, nil
		}
		ch := b.listings.DoChan(key, func() (any, error) { return b.listCatalogue(ctx, t, p) })
		select {
		case r := <-ch:
			switch {
			case r.Err == nil:
				return r.Val.(*catalogue), nil
			case ctx.Err() != nil:
				return nil, connectCtxErr(ctx)
			case errors.Is(r.Err, errListingAbandoned):
				continue // the caller that started it gave up; this one has not
			}
			return nil, r.Err
		case <-ctx.Done():
			return nil, connectCtxErr(ctx)
		}
	}
}

// errListingAbandoned: the caller whose context a shared listing ran under gave up.
var errListingAbandoned = errors.New("the catalogue listing was abandoned by the caller that started it")

// listCatalogue lists p's tools under ctx and caches the catalogue on t. The
// broker's Close waits for it; a peer that closes ends it.
func (b *Broker) listCatalogue(ctx context.Context, t *transport, p *peer) (*catalogue, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New(msgBrokerClosed)
	}
	b.wg.Add(1)
	b.mu.Unlock()
	defer b.wg.Done()
	tools, err := p.listTools(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errListingAbandoned
		}
		b.invalidateOnTransportError(ctx, t, p, err)
		return nil, err
	}
	cat, err := newCatalogue(tools)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if t.peer == p {
		t.cat = cat
	}
	b.mu.Unlock()
	return cat, nil
}

func newCatalogue(tools []*mcp.Tool) (*catalogue, error) {
	if len(tools) > maxCatalogueTools {
		return nil, fmt.Errorf("%s: more than %d tools", msgCatalogueInvalid, maxCatalogueTools)
	}
	c := &catalogue{fetched: time.Now(), index: make(map[string]int, len(tools))}
	for _, tool := range tools {
		if tool == nil || !registry.ValidName(tool.Name, registry.MaxToolNameBytes) {
			return nil, fmt.Errorf("%s: a tool has an invalid name", msgCatalogueInvalid)
		}
		if _, dup := c.index[tool.Name]; dup {
			return nil, fmt.Errorf("%s: tool %q is listed twice", msgCatalogueInvalid, tool.Name)
		}
		def, err := json.Marshal(tool)
		if err != nil {
			return nil, fmt.Errorf("%s: tool %q cannot be encoded", msgCatalogueInvalid, tool.Name)
		}
		ct := catalogueTool{name: tool.Name, def: def}
		if tool.InputSchema != nil {
			if ct.schema, err = json.Marshal(tool.InputSchema); err != nil {
				return nil, fmt.Errorf("%s: tool %q has an unusable inputSchema", msgCatalogueInvalid, tool.Name)
			}
			ct.check = argcheck.NewSchema(ct.schema)
		}
		c.index[tool.Name] = len(c.tools)
		c.tools = append(c.tools, ct)
	}
	return c, nil
}

// codeRejectedByTransport is go-sdk's internal jsonrpc2.ErrRejected: its HTTP
// transport reports an undeliverable request (server gone, connection refused)
// as this JSON-RPC error, though the server never answered.
const codeRejectedByTransport = -32005

// isProtocolError reports whether err is a JSON-RPC error the server itself sent.
func isProtocolError(err error, rpcErr **jsonrpc.Error) bool {
	return errors.As(err, rpcErr) && (*rpcErr).Code != codeRejectedByTransport
}

// invalidateOnTransportError drops a peer whose request failed below the
// protocol: a stdio peer whose pipe broke, or an HTTP server that went away (go-sdk
// keeps such an HTTP session open, and every later call would fail on it). A
// JSON-RPC error or a cancelled request leaves the shared peer in place.
func (b *Broker) invalidateOnTransportError(ctx context.Context, t *transport, p *peer, err error) {
	var rpcErr *jsonrpc.Error
	if ctx.Err() != nil || isProtocolError(err, &rpcErr) || errors.Is(err, errCatalogueRefused) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.peer == p {
		t.peer, t.cat = nil, nil
		b.closePeerAsync(p)
	}
}

// safeText bounds a downstream message and strips control characters, so a
// server cannot flood or garble the cell's error.
func safeText(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
