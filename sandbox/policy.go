package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Mode is what --sandbox names.
type Mode string

const (
	// FullAccess is no sandbox: cells run with the user's full rights (the default).
	FullAccess Mode = "full-access"
	// WorkspaceWrite lets cells write only beneath the launch project, the worker's
	// own temp directory and the roots --add-writable-root adds; no network but the
	// allowed-domains proxy.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly lets cells write only in the worker's own temp directory; no network
	// but the allowed-domains proxy.
	ReadOnly Mode = "read-only"
	// InheritCodex applies, per call, the sandbox policy Codex sends with it.
	InheritCodex Mode = "inherit-codex"
)

// Modes are the values --sandbox takes, in the order the help lists them.
var Modes = []Mode{FullAccess, WorkspaceWrite, ReadOnly, InheritCodex}

// ParseMode reads --sandbox.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("one of %s", strings.Join(names, ", "))
}

// SystemWritable are the paths every sandboxed worker may write besides its roots:
// the null and zero devices, and /dev/shm, where POSIX semaphores and shared memory
// live (multiprocessing's locks and queues need them).
var SystemWritable = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/shm"}

// Policy is what one sandboxed worker, and everything it starts, runs under. It
// travels to the guardian in the child's spec; a nil *Policy is full access.
type Policy struct {
	// Mode names the policy: workspace-write or read-only (for inherit-codex, the
	// Codex mode it corresponds to).
	Mode Mode `json:"mode"`
	// Codex says the policy is Codex's, read from the call (--sandbox inherit-codex).
	Codex bool `json:"codex,omitempty"`
	// WritableRoots are the directories (and device files) beneath which writes are
	// allowed; everything else reads and executes as usual. The guardian adds the
	// worker's private temp directory.
	WritableRoots []string `json:"writable_roots"`
	// Network, when set, leaves the network unrestricted (Codex's network
	// "enabled"). Otherwise no socket reaches anything but, when ProxyPort is set,
	// TCP connections to that port: the allowed-domains proxy's.
	Network   bool `json:"network,omitempty"`
	ProxyPort int  `json:"proxy_port,omitempty"`
	// Domains are the hosts the proxy admits, for messages and health.
	Domains []string `json:"domains,omitempty"`
	// NotEnforced are the parts of the policy asked for (Codex's) that this one does
	// not enforce, each a sentence.
	NotEnforced []string `json:"not_enforced,omitempty"`
}

// Settings are the server's sandbox flags, checked at start.
type Settings struct {
	Mode Mode
	// Project is the launch project (the default session's): the writable root of
	// workspace-write, whatever project a session is opened on.
	Project string
	// ExtraRoots are --add-writable-root's directories, absolute and canonical.
	ExtraRoots []string
	// Domains are --allow-domain's patterns; ProxyPort is the port of the proxy that
	// admits them (0 when there are none).
	Domains   []string
	ProxyPort int
	// Enforcement is what the kernel enforces of it, found at start.
	Enforcement Enforcement
}

// Sandboxed says whether cells run under a sandbox (possibly per call).
func (s Settings) Sandboxed() bool { return s.Mode != "" && s.Mode != FullAccess }

// Policy is the policy of a worker under the server's own mode, nil for
// full-access and for inherit-codex (whose policy comes with each call).
func (s Settings) Policy() *Policy {
	var roots []string
	switch s.Mode {
	case WorkspaceWrite:
		roots = append([]string{s.Project}, s.ExtraRoots...)
	case ReadOnly:
	default:
		return nil
	}
	return s.restricted(s.Mode, roots)
}

// restricted is a policy of mode with these roots, the system's writable paths and
// the network off but for the proxy.
func (s Settings) restricted(mode Mode, roots []string) *Policy {
	p := &Policy{Mode: mode, WritableRoots: dedupe(append(roots, SystemWritable...)), ProxyPort: s.ProxyPort}
	if s.ProxyPort != 0 {
		p.Domains = s.Domains
	}
	return p
}

// ProbePolicy is the policy of an interpreter probe: it needs no writes and no
// network, whatever the cells may do. Nil under full-access.
func (s Settings) ProbePolicy() *Policy {
	if !s.Sandboxed() {
		return nil
	}
	return &Policy{Mode: ReadOnly, WritableRoots: slices.Clone(SystemWritable)}
}

// ID is the policy as one comparable string: two workers with equal IDs run under
// the same rules. Nil is "".
func (p *Policy) ID() string {
	if p == nil {
		return ""
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// CacheKey names the policy for the compiled-code cache of its workers: equal for
// workers with the same rights, across server lifetimes (the proxy's port aside), so
// that code one worker stores only ever runs in a worker that could have run it.
func (p *Policy) CacheKey() string {
	q := *p
	q.NotEnforced = nil
	if q.ProxyPort != 0 {
		q.ProxyPort = 1
	}
	sum := sha256.Sum256([]byte(q.ID()))
	return hex.EncodeToString(sum[:8])
}

// WithRoot is p with one more writable root (the worker's temp directory, its code
// cache).
func (p *Policy) WithRoot(dir string) *Policy {
	q := *p
	q.WritableRoots = dedupe(append(slices.Clone(p.WritableRoots), dir))
	return &q
}

// Name is how messages name the policy: "workspace-write", or "Codex's
// workspace-write".
func (p *Policy) Name() string {
	if p == nil {
		return string(FullAccess)
	}
	if p.Codex {
		return "Codex's " + string(p.Mode)
	}
	return string(p.Mode)
}

// NetworkText is the policy's network in words, for health.
func (p *Policy) NetworkText() string {
	switch {
	case p == nil || p.Network:
		return "unrestricted"
	case p.ProxyPort != 0:
		return fmt.Sprintf("only the allowed-domains proxy, 127.0.0.1:%d (%s)", p.ProxyPort, strings.Join(p.Domains, ", "))
	}
	return "off"
}

// dedupe keeps the first of each path, in order.
func dedupe(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
