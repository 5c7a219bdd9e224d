package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Standard headers of a 2026-07-28 request over Streamable HTTP, which a request of
// the tasks extension carries too (its Mcp-Name is the task's id).
const (
	methodHeader = "Mcp-Method"
	nameHeader   = "Mcp-Name"
)

// serveTask answers a POST whose body is one request of the tasks extension
// (Host.Tasks owns it), which go-sdk's handlers do not know, and reports whether
// it did. The
// reply is one JSON object, with the request's id as sent. A request under
// 2026-07-28 must name its method in Mcp-Method and its taskId in Mcp-Name, as the
// extension asks of a client; a header missing or not matching is refused as
// go-sdk refuses one for tools/call (400, -32020).
func (h *httpHandler) serveTask(w http.ResponseWriter, r *http.Request, body []byte) bool {
	req, rawID, ok := decodeRequest(body)
	if !ok || h.tasks == nil || !h.tasks.Owns(req.Method, req.Params) || rawID == nil || string(bytes.TrimSpace(rawID)) == "null" {
		return false
	}
	reply := func(status int, result any, rpcErr *jsonrpc.Error) {
		msg := map[string]any{"jsonrpc": "2.0", "id": rawID}
		if rpcErr != nil {
			msg["error"] = rpcErr
		} else {
			msg["result"] = result
		}
		data, err := json.Marshal(msg)
		if err != nil {
			data, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rawID,
				"error": &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task state could not be encoded: " + err.Error()}})
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(data)
	}
	if r.Header.Get(protocolVersionHeader) >= StatelessProtocol && req.Method != MethodSubscriptionsListen {
		var p struct {
			TaskID any `json:"taskId"`
		}
		json.Unmarshal(req.Params, &p)
		taskID, _ := p.TaskID.(string)
		switch method, name := r.Header.Get(methodHeader), r.Header.Get(nameHeader); {
		case method == "":
			reply(http.StatusBadRequest, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "missing required Mcp-Method header"})
			return true
		case method != req.Method:
			reply(http.StatusBadRequest, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
				Message: fmt.Sprintf("header mismatch: Mcp-Method header value '%s' does not match body value '%s'", method, req.Method)})
			return true
		case name == "":
			reply(http.StatusBadRequest, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
				Message: fmt.Sprintf("missing required Mcp-Name header for method %q: send the taskId", req.Method)})
			return true
		case name != taskID:
			reply(http.StatusBadRequest, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
				Message: fmt.Sprintf("header mismatch: Mcp-Name header value '%s' does not match the taskId '%s'", name, taskID)})
			return true
		}
	}
	result, rpcErr := h.tasks.Serve(r.Context(), req.Method, req.Params)
	reply(http.StatusOK, result, rpcErr)
	return true
}
