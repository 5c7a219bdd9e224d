package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/sandbox/proxy"
)

// sandboxFlags are --sandbox, --add-writable-root and --allow-domain as parsed
// (docs/contract.md §11.1).
type sandboxFlags struct {
	mode    sandbox.Mode
	roots   []string // absolute and canonical, existing directories
	domains proxy.Patterns
}

// defineSandboxFlags adds the sandbox's flags to fs, filling f.
func defineSandboxFlags(fs *flag.FlagSet, f *sandboxFlags) {
	f.mode = sandbox.FullAccess
	fs.Func("sandbox", "`MODE` of the OS sandbox cells run in (Linux: Landlock and seccomp): full-access (the default: cells run as you), workspace-write (writes only beneath the launch directory, the worker's temp directory and --add-writable-root; no network but --allow-domain), read-only (writes only in the worker's temp directory; no network but --allow-domain), or inherit-codex (each call's policy as Codex sends it; calls without one are refused)", func(v string) error {
		m, err := sandbox.ParseMode(v)
		f.mode = m
		return err
	})
	fs.Func("add-writable-root", "with --sandbox workspace-write: one more existing `DIR` cells may write beneath (repeatable)", func(v string) error {
		dir, err := canonicalDir(v)
		if err != nil {
			return err
		}
		f.roots = append(f.roots, dir)
		return nil
	})
	fs.Func("allow-domain", "with --sandbox: let cells reach `HOST` (pypi.org, *.pythonhosted.org, an IP address) over HTTP and HTTPS through a proxy repl-mcp runs on loopback, which the worker's HTTP_PROXY and HTTPS_PROXY name; repeatable", func(v string) error {
		p, err := proxy.Parse(v)
		f.domains = append(f.domains, p)
		return err
	})
}

// canonicalDir is dir absolute, its symbolic links resolved, or why it is no
// existing directory.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("%s: not an existing directory", dir)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s: not an existing directory", dir)
	}
	return abs, nil
}

// check refuses combinations that mean nothing: writable roots beyond
// workspace-write, allowed domains without a sandbox.
func (f sandboxFlags) check() error {
	switch {
	case len(f.roots) > 0 && f.mode != sandbox.WorkspaceWrite:
		return fmt.Errorf("--add-writable-root needs --sandbox workspace-write (this is %s)", f.mode)
	case len(f.domains) > 0 && f.mode == sandbox.FullAccess:
		return errors.New("--allow-domain needs --sandbox workspace-write, read-only or inherit-codex: without a sandbox every domain is reachable already")
	}
	return nil
}

// sandboxSettings checks at start that kernel can enforce the sandbox the flags ask
// for, for the launch project: a kernel that cannot fails with one line saying what
// is missing; one that enforces less says on stderr what it leaves out. The
// allowed-domains proxy is started later (startProxy), once the check passed.
func sandboxSettings(f sandboxFlags, project string, kernel sandbox.Kernel, stderr io.Writer) (sandbox.Settings, error) {
	s := sandbox.Settings{Mode: f.mode, Project: project, ExtraRoots: f.roots, Domains: f.domains.Strings()}
	s.Enforcement.LandlockABI = kernel.LandlockABI
	if !s.Sandboxed() {
		return s, nil
	}
	probe := s
	if len(f.domains) > 0 {
		probe.ProxyPort = 1 // any port: the check asks whether TCP ports can be told apart
	}
	policy := probe.Policy()
	if policy == nil { // inherit-codex: Codex's strictest, with the proxy
		policy = &sandbox.Policy{Mode: sandbox.ReadOnly, ProxyPort: probe.ProxyPort}
	}
	e, err := kernel.Check(f.mode, policy)
	if err != nil {
		return s, err
	}
	s.Enforcement = e
	for _, what := range e.NotEnforced {
		fmt.Fprintf(stderr, "repl-mcp: --sandbox %s: not enforced on this kernel: %s\n", f.mode, what)
	}
	for _, what := range e.Limits {
		fmt.Fprintf(stderr, "repl-mcp: --sandbox %s: stricter on this kernel: %s\n", f.mode, what)
	}
	return s, nil
}

// startProxy starts the allowed-domains proxy when the sandbox admits domains, and
// records its port; the returned stop closes it (a no-op without one).
func startProxy(f sandboxFlags, s *sandbox.Settings, logger *slog.Logger) (stop func(), err error) {
	if !s.Sandboxed() || len(f.domains) == 0 {
		return func() {}, nil
	}
	p, err := proxy.Start(proxy.Config{Domains: f.domains, Logger: logger})
	if err != nil {
		return nil, err
	}
	s.ProxyPort = p.Port()
	return func() { p.Close() }, nil
}

// sandboxLine is doctor's line on the sandbox.
func sandboxLine(h repl.SandboxHealth) string {
	if h.Mode == string(sandbox.FullAccess) {
		return fmt.Sprintf("full-access: cells run with your rights (no --sandbox); this kernel has Landlock ABI %d", h.LandlockABI)
	}
	line := h.Mode
	if h.Policy != h.Mode {
		line += " (" + h.Policy + ")"
	}
	line += fmt.Sprintf("; writable: %s; network: %s; Landlock ABI %d", strings.Join(h.WritableRoots, ", "), h.Network, h.LandlockABI)
	if len(h.NotEnforced) > 0 {
		line += "; not enforced: " + strings.Join(h.NotEnforced, "; ")
	}
	return line
}
