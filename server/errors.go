package server

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The failures of a tool call that are the client's mistake in the request itself
// (docs/contract.md §2.3). Their messages are the contract's.
var (
	// errInvalidArguments is every *argError: arguments the input schema refuses.
	errInvalidArguments = errors.New("Invalid arguments")
	errUnknownTool      = errors.New("Unknown tool")
	errNeedSessionID    = errors.New("Pass session_id from python_health or python_session_open to reference persistent state")
	errSessionUnknown   = errors.New("Session not found or closed; open a new session")
)

// protocolError is the error table (docs/contract.md §2.3): which failures of a tool call
// reach the client as a JSON-RPC error -32602 (invalid params) instead of a tool
// result. Any other error a handler returns becomes a tool result {"error": message}
// with isError, which the model sees and can act on. go-sdk recognises a protocol
// error only as an unwrapped *jsonrpc.Error, so it is built here and returned as it
// is.
func protocolError(err error) *jsonrpc.Error {
	switch {
	case errors.Is(err, errInvalidArguments),
		errors.Is(err, errUnknownTool),
		errors.Is(err, errNeedSessionID),
		errors.Is(err, errSessionUnknown):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return nil
}

// unknownSessionError is errSessionUnknown with the answer the sessions give for
// that id: an earlier server lifetime's says that the server restarted
// (repl.Manager.UnknownSession).
type unknownSessionError struct{ msg string }

func (e unknownSessionError) Error() string { return e.msg }
func (e unknownSessionError) Unwrap() error { return errSessionUnknown }

// fieldsError is a tool failure whose result carries fields beside "error", where a
// tool's output schema requires them (python_cancel's cancel_requested: false).
type fieldsError struct {
	err    error
	fields map[string]any
}

func (e *fieldsError) Error() string { return e.err.Error() }
func (e *fieldsError) Unwrap() error { return e.err }

// failWith returns err as a tool failure whose result also holds key: value.
func failWith(err error, key string, value any) error {
	return &fieldsError{err: err, fields: map[string]any{key: value}}
}
