package server

import (
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The error boundary (reference section 2.3): these failures are JSON-RPC protocol
// errors (-32602, invalid params); everything else a tool meets is a tool result with
// isError. go-sdk recognises a protocol error only as an unwrapped *jsonrpc.Error, so
// these are built here and returned as they are.
const (
	msgUnknownTool    = "Unknown tool"
	msgNeedSessionID  = "Pass session_id from python_health or python_session_open to reference persistent state"
	msgSessionUnknown = "Session not found or closed; open a new session"
)

func invalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}
