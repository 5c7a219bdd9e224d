package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/kballard/go-shellquote"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioSpec launches a downstream MCP server over stdio.
type StdioSpec struct {
	Command string
	Args    []string
	Env     []string // the whole environment
	Dir     string
	// Display is how messages show the command: the registry's text, ${VAR}
	// placeholders by name (see writtenCommand). Empty shows Command.
	Display string
}

// display is the command as messages show it.
func (s StdioSpec) display() string {
	if s.Display != "" {
		return s.Display
	}
	return shellquote.Join(s.Command)
}

// redact replaces, in a message of the system or the guardian about starting
// spec, the expanded command, the program it resolved to and the working
// directory by their registry forms, so that no expanded ${VAR} value shows.
func (s StdioSpec) redact(msg, program string) string {
	for _, r := range []struct{ value, shown string }{
		{program, s.display()},
		{s.Command, s.display()},
		{s.Dir, "the entry's cwd"},
	} {
		if r.value != "" {
			msg = strings.ReplaceAll(msg, r.value, r.shown)
		}
	}
	return msg
}

// pathless is err without the file name that exec.LookPath's errors repeat.
func pathless(err error) error {
	var execErr *exec.Error
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &execErr):
		return pathless(execErr.Err)
	case errors.As(err, &pathErr):
		return pathErr.Err
	}
	return err
}

// peer is one live downstream MCP server: a go-sdk client session, over the stdio of
// a child that a guardian owns (so the child dies with the server even by SIGKILL;
// its stderr is discarded: it must never reach our stdout), or over Streamable HTTP.
type peer struct {
	session *mcp.ClientSession
	proc    *guardian.Process // nil for HTTP
	ended   chan struct{}     // closed once the MCP session is over
}

// newPeer wraps a connected session; proc is nil for HTTP peers.
func newPeer(session *mcp.ClientSession, proc *guardian.Process) *peer {
	p := &peer{session: session, proc: proc, ended: make(chan struct{})}
	go func() {
		session.Wait()
		close(p.ended)
	}()
	return p
}

// dialStdio starts the server and completes the MCP handshake within connectTimeout.
func dialStdio(ctx context.Context, spec StdioSpec, exe, version string) (*peer, error) {
	command, err := exec.LookPath(spec.Command)
	if err != nil {
		return nil, fmt.Errorf("downstream command %s cannot be run: %w", spec.display(), pathless(err))
	}
	proc, err := guardian.StartPiped(exe, guardian.Spec{Program: command, Args: spec.Args, Env: spec.Env, Dir: spec.Dir},
		guardian.Pipes{Stdin: true, Stdout: true})
	if err != nil {
		return nil, fmt.Errorf("start downstream server %s: %s", spec.display(), spec.redact(err.Error(), command))
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-broker", Version: version}, nil)
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	session, err := client.Connect(ctx, &stdioTransport{out: proc.Stdout, in: proc.Stdin}, nil)
	if err != nil {
		proc.Stop(peerStopGrace)
		proc.CloseAll()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("downstream server %s did not complete the MCP handshake within %v", spec.display(), connectTimeout)
		}
		return nil, fmt.Errorf("MCP handshake with downstream server %s failed: %s", spec.display(), spec.redact(err.Error(), command))
	}
	return newPeer(session, proc.Process), nil
}

// alive reports whether the MCP session is still open and, for stdio, the server
// process still runs. Only a peer that is not alive is discarded: a protocol error or
// a cancelled call leaves a shared transport in place.
func (p *peer) alive() bool {
	select {
	case <-p.ended:
		return false
	default:
	}
	if p.proc == nil {
		return true
	}
	select {
	case <-p.proc.Exited():
		return false
	default:
		return true
	}
}

// close ends the MCP session and, for stdio, the server's whole process group at
// once: a downstream server may ignore stdin EOF, and waiting for it costs every close.
func (p *peer) close() {
	if p.proc == nil {
		p.session.Close()
		return
	}
	p.proc.Close()
	p.session.Close()
	p.proc.Stop(peerStopGrace)
}

// listTools follows every page of the catalogue: at most maxPages pages and
// maxCatalogueTools tools, and a cursor that comes back is an error rather than a loop.
func (p *peer) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	seen := map[string]bool{}
	cursor := ""
	for range maxPages {
		res, err := p.session.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if rpcErr := (*jsonrpc.Error)(nil); errors.As(err, &rpcErr) && rpcErr.Code == codeReplyTooDeep {
				return nil, fmt.Errorf("%w: the server's reply nests deeper than %d levels", errCatalogueRefused, peerMaxDepth)
			}
			return nil, fmt.Errorf("%s (the server's reply was refused: malformed, over the 1 MiB frame limit, or the connection ended)", msgCatalogueInvalid)
		}
		tools = append(tools, res.Tools...)
		if len(tools) > maxCatalogueTools {
			return nil, fmt.Errorf("%w: more than %d tools", errCatalogueRefused, maxCatalogueTools)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("%w: the server repeated a pagination cursor", errCatalogueRefused)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("MCP tool catalogue exceeds %d pages; catalogue is incomplete", maxPages)
}

// errCatalogueRefused is a well-formed catalogue the broker will not use; the
// connection that carried it is fine.
var errCatalogueRefused = errors.New(msgCatalogueInvalid)
