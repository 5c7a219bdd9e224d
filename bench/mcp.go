package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"time"
)

// protocolVersion is the MCP version the bench asks for.
const protocolVersion = "2025-11-25"

// Deadlines of MCP requests, beyond a cell's own timeout.
const (
	requestTimeout = 10 * time.Second
	cellSlack      = 5 * time.Second
)

// mcpServer is a repl-mcp process spoken to as a minimal MCP client over stdio:
// one request at a time, newline-delimited JSON-RPC 2.0.
type mcpServer struct {
	*child
	nextID int64
}

func startServer(ctx context.Context, dir, binary, python string) (*mcpServer, error) {
	return startServerEnv(ctx, dir, binary, python, nil)
}

// startServerEnv is startServer with env added to the bench's environment and args
// after --python.
func startServerEnv(ctx context.Context, dir, binary, python string, env []string, args ...string) (*mcpServer, error) {
	cmd := exec.Command(binary, append([]string{"--python", python}, args...)...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	c, err := startPiped(ctx, "repl-mcp", cmd)
	if err != nil {
		return nil, err
	}
	return &mcpServer{child: c}, nil
}

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int64 `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// rpcMessage is any line from the server. Result is set to a pointer before
// decoding: the result is decoded into what it points to.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result any             `json:"result"`
	Error  *rpcError       `json:"error"`
}

// request sends one request and waits for its reply, answering any request from
// the server with "method not found" and skipping notifications. It returns the
// result and the round trip time, from just before the write to just after the
// reply's line was read.
func (s *mcpServer) request(ctx context.Context, timeout time.Duration, method string, params any) (json.RawMessage, time.Duration, error) {
	var res json.RawMessage
	took, err := s.requestInto(ctx, timeout, method, params, &res)
	return res, took, err
}

// requestInto is request with the result decoded into *result (a non-nil pointer) in
// the same pass as the line, so that a large reply is parsed once.
func (s *mcpServer) requestInto(ctx context.Context, timeout time.Duration, method string, params, result any) (time.Duration, error) {
	s.nextID++
	id := s.nextID
	line, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: &id, Method: method, Params: params})
	if err != nil {
		return 0, err
	}
	want := strconv.FormatInt(id, 10)
	deadline := time.Now().Add(timeout)
	start := time.Now()
	if err := s.writeLine(ctx, line, deadline); err != nil {
		return 0, fmt.Errorf("%s: %w", method, err)
	}
	target := reflect.ValueOf(result).Elem()
	for {
		raw, err := s.readLine(ctx, deadline)
		if err != nil {
			if errors.Is(err, errTimeout) {
				err = fmt.Errorf("no reply within %v: %w", timeout, err)
			}
			return 0, fmt.Errorf("%s: %w", method, err)
		}
		took := time.Since(start)
		// Result holds the pointer, so Unmarshal decodes into what it points to; a
		// line that is not our reply may have written there, hence the reset.
		target.SetZero()
		m := rpcMessage{Result: result}
		if err := json.Unmarshal(raw, &m); err != nil {
			return 0, fmt.Errorf("%s: the server wrote a line that is not JSON-RPC: %.200q (%v)", method, raw, err)
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			reply, _ := json.Marshal(map[string]any{
				"jsonrpc": "2.0", "id": m.ID,
				"error": rpcError{Code: -32601, Message: "the bench client supports no requests"},
			})
			if err := s.writeLine(ctx, reply, deadline); err != nil {
				return 0, fmt.Errorf("%s: %w", method, err)
			}
		case m.Method != "":
			// A notification: nothing to do.
		case string(m.ID) != want:
			// A reply to an earlier request that timed out on our side.
		case m.Error != nil:
			return took, fmt.Errorf("%s: %w", method, m.Error)
		default:
			return took, nil
		}
	}
}

func (s *mcpServer) notify(ctx context.Context, method string) error {
	line, err := json.Marshal(rpcRequest{JSONRPC: "2.0", Method: method})
	if err != nil {
		return err
	}
	return s.writeLine(ctx, line, time.Now().Add(requestTimeout))
}

// initialize performs the MCP handshake and returns its round trip time.
func (s *mcpServer) initialize(ctx context.Context) (time.Duration, error) {
	res, took, err := s.request(ctx, requestTimeout, "initialize", map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "repl-mcp-bench", "version": "1"},
	})
	if err != nil {
		return 0, err
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(res, &r) != nil || r.ProtocolVersion == "" {
		return 0, fmt.Errorf("initialize: reply has no protocolVersion: %.200s", res)
	}
	return took, s.notify(ctx, "notifications/initialized")
}

// listTools calls tools/list and returns the number of tools.
func (s *mcpServer) listTools(ctx context.Context) (int, error) {
	res, _, err := s.request(ctx, requestTimeout, "tools/list", map[string]any{})
	if err != nil {
		return 0, err
	}
	var r struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return 0, fmt.Errorf("tools/list: %w", err)
	}
	return len(r.Tools), nil
}

// cellResult is the part of an execute_python result the bench reads.
type cellResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type string `json:"type"`
	} `json:"content"`
	Structured struct {
		Success     bool    `json:"success"`
		ReturnValue *string `json:"return_value"`
		Error       *string `json:"error"`
		Stdout      string  `json:"stdout"`
		ElapsedMs   float64 `json:"elapsed_ms"`
		State       string  `json:"state"`
		Truncated   struct {
			Stdout bool `json:"stdout"`
		} `json:"truncated"`
	} `json:"structuredContent"`
	size int // bytes of the encoded result
}

// execute runs one cell and returns its result and round trip time. A cell that
// did not succeed is an error.
func (s *mcpServer) execute(ctx context.Context, code string, timeout time.Duration) (cellResult, time.Duration, error) {
	args := map[string]any{"code": code, "timeout": timeout.Seconds()}
	res, took, err := s.request(ctx, timeout+cellSlack, "tools/call",
		map[string]any{"name": "execute_python", "arguments": args})
	if err != nil {
		return cellResult{}, 0, err
	}
	var r cellResult
	if err := json.Unmarshal(res, &r); err != nil {
		return cellResult{}, 0, fmt.Errorf("execute_python: undecodable result: %w", err)
	}
	r.size = len(res)
	if r.IsError || !r.Structured.Success {
		msg := "no error text"
		if r.Structured.Error != nil {
			msg = lastLines(*r.Structured.Error, 3)
		}
		return r, took, fmt.Errorf("execute_python %.40q did not succeed: %s (result: %.300s)", code, msg, res)
	}
	return r, took, nil
}

// workerInfo is what python_health says about the default session's worker.
type workerInfo struct {
	pid        int
	executable string
	version    string
}

func (s *mcpServer) health(ctx context.Context) (workerInfo, error) {
	res, _, err := s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_health", "arguments": map[string]any{}})
	if err != nil {
		return workerInfo{}, err
	}
	var r struct {
		Structured struct {
			Server struct {
				Python *struct {
					Pid              int    `json:"pid"`
					PythonExecutable string `json:"python_executable"`
					PythonVersion    string `json:"python_version"`
					Running          bool   `json:"running"`
				} `json:"python"`
			} `json:"server"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return workerInfo{}, fmt.Errorf("python_health: %w", err)
	}
	p := r.Structured.Server.Python
	if p == nil || !p.Running || p.Pid <= 0 {
		return workerInfo{}, fmt.Errorf("python_health reports no running worker: %.300s", res)
	}
	return workerInfo{pid: p.Pid, executable: p.PythonExecutable, version: p.PythonVersion}, nil
}
