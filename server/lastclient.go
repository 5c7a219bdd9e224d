package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client that connected last (docs/contract.md §3.4): every initialize and
// server/discover a server answers replaces one small private file, which `repl-mcp
// doctor` reads to say which agent last used this installation, and in which form
// its results were shaped. It holds the clientInfo the client sent and nothing of
// the conversation.

// LastClient is what the file holds.
type LastClient struct {
	Name     string    `json:"name"`
	Version  string    `json:"version"`
	Protocol string    `json:"protocol"`
	Form     string    `json:"form"` // "text" or "structured"
	At       time.Time `json:"at"`
}

// lastClientLimit bounds the file a reader accepts.
const lastClientLimit = 4096

// recordLastClient is the middleware that writes the file after each initialize and
// server/discover that succeeded. A failure to write is logged, never the client's.
func (s *Server) recordLastClient(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || s.lastClient == "" || (method != "initialize" && method != "server/discover") {
			return res, err
		}
		var info *mcp.Implementation
		protocol := ""
		if r, ok := req.(*mcp.InitializeRequest); ok && r.Params != nil {
			info, protocol = r.Params.ClientInfo, r.Params.ProtocolVersion
		} else if r, ok := req.(clientInfoRequest); ok {
			info = r.ClientInfo()
			if p, ok := req.(interface{ ProtocolVersion() string }); ok {
				protocol = p.ProtocolVersion()
			}
		}
		if info == nil {
			return res, err
		}
		form := "structured"
		if s.format == FormatText || s.format == FormatAuto && textClient(info.Name) {
			form = "text"
		}
		rec := LastClient{Name: info.Name, Version: info.Version, Protocol: protocol, Form: form, At: time.Now().UTC().Truncate(time.Second)}
		if werr := writeLastClient(s.lastClient, rec); werr != nil {
			s.logger.Debug("recording the last client", "path", s.lastClient, "err", werr)
		}
		return res, err
	}
}

// writeLastClient replaces path with rec, atomically, as a 0600 file in a 0700
// directory it makes if needed. Unlike internal/atomicfile it does not fsync: a
// record a crash loses costs nothing, and the initialize it follows stays fast.
func writeLastClient(path string, rec LastClient) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".last-client-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(append(data, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
	}
	return werr
}

// ErrNoLastClient says that no client has connected since the file's directory was
// made (or since it was deleted).
var ErrNoLastClient = errors.New("no client has connected yet")

// ReadLastClient reads the file a server with Config.LastClient = path writes: only
// a regular file of at most 4 KiB, not through a symbolic link.
func ReadLastClient(path string) (LastClient, error) {
	var rec LastClient
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return rec, ErrNoLastClient
	case err != nil:
		return rec, err
	case !fi.Mode().IsRegular() || fi.Size() > lastClientLimit:
		return rec, fmt.Errorf("%s is not a regular file of at most %d bytes", path, lastClientLimit)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.Name == "" {
		return rec, fmt.Errorf("%s is not a record of the last client", path)
	}
	return rec, nil
}
