package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The sandbox on the MCP surface (docs/contract.md §11): Codex's per-call policy
// under --sandbox inherit-codex, and what the model reads about the sandbox.

// capabilities are what the initialize result declares: tools, and under --sandbox
// inherit-codex the experimental capability that makes Codex send its sandbox
// policy with every tools/call.
func capabilities(mode sandbox.Mode) *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if mode == sandbox.InheritCodex {
		caps.Experimental = map[string]any{sandbox.CodexCapability: map[string]any{}}
	}
	return caps
}

// callPolicy is the sandbox policy of the call in ctx under --sandbox
// inherit-codex: Codex's, read from the call's _meta; nil under any other mode. A
// call without it, or with one that cannot be read in full, is an error: such a
// server runs no code outside Codex's policy.
func (s *Server) callPolicy(ctx context.Context) (*repl.CallPolicy, error) {
	if s.sandbox.Mode != sandbox.InheritCodex {
		return nil, nil
	}
	var meta map[string]any
	if call, _ := ctx.Value(callRequestKey{}).(*mcp.CallToolRequest); call != nil && call.Params != nil {
		meta = call.Params.Meta
	}
	p, err := sandbox.FromCodex(meta, sandbox.CodexContext{TempDir: s.codexTempDir, ProxyPort: s.sandbox.ProxyPort, Domains: s.sandbox.Domains})
	if err != nil {
		return nil, err
	}
	return &repl.CallPolicy{Policy: p}, nil
}

// withPolicy sets req's sandbox policy from the call in ctx (callPolicy).
func (s *Server) withPolicy(ctx context.Context, req *repl.ExecRequest) error {
	p, err := s.callPolicy(ctx)
	req.Sandbox = p
	return err
}

// instructionsFor are the server's instructions under a sandbox mode: the first line
// says how far cells reach.
func instructionsFor(mode sandbox.Mode) string {
	if mode == "" || mode == sandbox.FullAccess {
		return instructions
	}
	return strings.Replace(instructions, "(trusted, full host access, not a sandbox)",
		"(in repl-mcp's OS sandbox, --sandbox "+string(mode)+": writes and network are limited)", 1)
}

// sandboxItems are the footer's items about the run's sandbox.
func sandboxItems(n *repl.SandboxNote) []string {
	if n == nil {
		return nil
	}
	var items []string
	if n.Changed != "" {
		items = append(items, n.Changed)
	} else if len(n.NotEnforced) > 0 {
		items = append(items, "sandbox "+n.Policy)
	}
	for _, what := range n.NotEnforced {
		items = append(items, "not enforced: "+cutFooter(what, footerErrorMax))
	}
	if n.Refused != "" {
		items = append(items, n.Refused)
	}
	return items
}

// sandboxText is python_health's sentence on the sandbox, at most
// sandboxTextLimit bytes: the roots and what is not enforced are listed bounded
// (structured health has them whole).
func sandboxText(h repl.SandboxHealth) string {
	if h.Policy == string(sandbox.FullAccess) {
		return "trusted local Python with full host access, not a sandbox."
	}
	text := fmt.Sprintf("Python in repl-mcp's OS sandbox (--sandbox %s, now %s): writes only beneath %s; network %s.",
		h.Mode, h.Policy, listed(h.WritableRoots, cutName), cutFooter(h.Network, footerErrorMax))
	if len(h.WritableRoots) == 0 {
		text = fmt.Sprintf("Python in repl-mcp's OS sandbox (--sandbox %s): %s.", h.Mode, h.Policy)
	}
	if len(h.NotEnforced) > 0 {
		text += " Not enforced: " + listed(h.NotEnforced, cutName) + "."
	}
	return cutFooter(text, sandboxTextLimit)
}

// sandboxTextLimit bounds the sandbox's sentence in python_health's text.
const sandboxTextLimit = 600
