package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Peer limits (reference section 13.1).
const (
	connectTimeout = 30 * time.Second
	peerLineLimit  = 1 << 20
	peerStopGrace  = time.Second
)

// StdioSpec launches a downstream MCP server over stdio.
type StdioSpec struct {
	Command string
	Args    []string
	Env     []string // the whole environment
	Dir     string
}

// peer is one live downstream MCP server: a go-sdk client session over the stdio of
// a child that a guardian owns, so the child dies with the server even by SIGKILL.
// Its stderr is discarded: it must never reach our stdout.
type peer struct {
	session *mcp.ClientSession
	proc    *guardian.Process
}

// dialStdio starts the server and completes the MCP handshake within connectTimeout.
func dialStdio(ctx context.Context, spec StdioSpec, exe, version string) (*peer, error) {
	command, err := exec.LookPath(spec.Command)
	if err != nil {
		return nil, fmt.Errorf("downstream command %q cannot be run: %w", spec.Command, err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	proc, err := guardian.Start(guardian.Config{
		Executable: exe,
		Spec:       guardian.Spec{Program: command, Args: spec.Args, Env: spec.Env, Dir: spec.Dir},
		Stdin:      inR,
		Stdout:     outW,
	})
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start downstream server %q: %w", spec.Command, err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "repl-mcp-broker", Version: version}, nil)
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW, MaxLineLength: peerLineLimit}, nil)
	if err != nil {
		proc.Stop(peerStopGrace)
		inW.Close()
		outR.Close()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("downstream server %q did not complete the MCP handshake within %v", spec.Command, connectTimeout)
		}
		return nil, fmt.Errorf("MCP handshake with downstream server %q failed: %w", spec.Command, err)
	}
	return &peer{session: session, proc: proc}, nil
}

// alive reports whether the server process still runs.
func (p *peer) alive() bool {
	select {
	case <-p.proc.Exited():
		return false
	default:
		return true
	}
}

// close ends the MCP session and the server's whole process group at once: a
// downstream server may ignore stdin EOF, and waiting for it costs every close.
func (p *peer) close() {
	p.proc.Close()
	p.session.Close()
	p.proc.Stop(peerStopGrace)
}

// listTools follows every page of the catalogue, at most maxPages.
func (p *peer) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	cursor := ""
	for range maxPages {
		res, err := p.session.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			return tools, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("catalogue has more than %d pages", maxPages)
}

// maxPages bounds catalogue pagination (reference section 13.1).
const maxPages = 128
