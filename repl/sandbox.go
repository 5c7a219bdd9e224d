package repl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iota-uz/repl-mcp/sandbox"
)

// The sandbox as sessions see it (docs/contract.md §11): which policy a session's
// workers start under, the per-call policy of --sandbox inherit-codex, the note a
// result carries about the sandbox, and what health says of it.

// CallPolicy is the sandbox policy a call brought under --sandbox inherit-codex
// (Codex's, read from its _meta); a nil Policy is Codex's full access.
type CallPolicy struct{ Policy *sandbox.Policy }

// SandboxNote is what a result says about its sandbox, when there is something to
// say: the policy changed (its worker restarted under the new one), a part of it is
// not enforced, or, once per session, that it may have refused what the run did and
// how to widen it.
type SandboxNote struct {
	Policy      string   `json:"policy"`
	Changed     string   `json:"changed,omitempty"`
	NotEnforced []string `json:"not_enforced,omitempty"`
	Refused     string   `json:"refused,omitempty"`
}

// SandboxHealth is the sandbox in a session's health.
type SandboxHealth struct {
	// Mode is --sandbox's; Policy the one the session's workers run under now.
	Mode   string `json:"mode"`
	Policy string `json:"policy"`
	// WritableRoots are where a cell may write; null under full access (anywhere the
	// user may). A running worker's own temp directory and code cache are among them.
	// The other lists are never null.
	WritableRoots  []string `json:"writable_roots"`
	Network        string   `json:"network"`
	AllowedDomains []string `json:"allowed_domains"`
	LandlockABI    int      `json:"landlock_abi"`
	NotEnforced    []string `json:"not_enforced"`
	Limits         []string `json:"limits"`
}

// initialPolicy is the policy a new session's workers start under: the server's
// mode's; under inherit-codex, read-only with the network off until a call brings
// Codex's (a worker never starts without one, usePolicy, but a bug would then
// start the strictest one, never an open one).
func (cfg *Config) initialPolicy() *sandbox.Policy {
	if cfg.Sandbox.Mode == sandbox.InheritCodex {
		return cfg.Sandbox.ProbePolicy()
	}
	return cfg.Sandbox.Policy()
}

// sandboxedCache is the code cache and policy of a worker under p: a cache of its
// own beneath cache for each policy (sandbox.Policy.CacheKey), writable, so that the
// code a sandboxed worker stores only ever runs in a worker with the same rights,
// never in an unsandboxed one. Where it cannot be made, the worker compiles its code
// and keeps none.
func sandboxedCache(cache string, p *sandbox.Policy) (string, *sandbox.Policy) {
	if p == nil || cache == "" {
		return cache, p
	}
	dir := filepath.Join(cache, "sandboxed-"+p.CacheKey())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", p
	}
	return dir, p.WithRoot(dir)
}

// sandboxed reports whether the session's workers run in a sandbox: the policy of
// its launch, which its live worker runs under and its next one will (a change of
// policy stops the worker, usePolicy). Such a session takes no snapshot.
func (s *Session) sandboxed() bool { return s.worker.currentLaunch().policy != nil }

// currentLaunch is the launch the session's next worker starts from.
func (l *lifecycle) currentLaunch() launch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launch
}

// usePolicy makes p the policy of the session's next workers and returns the one
// before and whether it changed; the launch's claim on a spare moves with it, so
// the next worker joins the new launch's pool.
func (l *lifecycle) usePolicy(p *sandbox.Policy) (*sandbox.Policy, bool) {
	l.mu.Lock()
	old := l.launch
	if old.policy.ID() == p.ID() && l.policySet {
		l.mu.Unlock()
		return old.policy, false
	}
	first := !l.policySet
	l.launch.policy, l.policySet = p, true
	joined := l.joined
	l.joined = false
	l.mu.Unlock()
	if joined {
		l.spares.leave(old)
	}
	if first {
		return nil, true
	}
	return old.policy, true
}

// usePolicy applies the policy r brought under --sandbox inherit-codex before
// anything else of it runs: a call without one is refused (Codex's policy is the
// only one such a server runs code under); a different one than the session's
// workers run under stops the live worker, whose variables are lost with it (the
// run then starts a new one, generation+1, and a guarded run learns STATE_CHANGED).
func (s *Session) usePolicy(r *run) *Result {
	if s.cfg.Sandbox.Mode != sandbox.InheritCodex {
		return nil
	}
	if r.req.Sandbox == nil {
		return failure(r.id, ReasonNoPolicy, sandbox.ErrNoCodexPolicy.Error()+msgNoState)
	}
	from, changed := s.worker.usePolicy(r.req.Sandbox.Policy)
	if !changed {
		return nil
	}
	to := r.req.Sandbox.Policy
	r.policyNote = &SandboxNote{Policy: to.Name()}
	if to != nil {
		r.policyNote.NotEnforced = to.NotEnforced
	}
	if w, _ := s.worker.settled(nil); w.state == workerReady {
		s.worker.stop(w.proc, workerDead)
		r.policyNote.Changed = fmt.Sprintf(msgSandboxChanged, from.Name(), to.Name())
	} else if from == nil && len(r.policyNote.NotEnforced) == 0 {
		r.policyNote = nil // the first policy, nothing to say
	}
	return nil
}

// noteSandbox adds to res what its sandbox has to say: the policy change usePolicy
// found, and, once per session, that the sandbox may have refused what the run did.
func (s *Session) noteSandbox(r *run, res *Result) {
	note := r.policyNote
	p := s.worker.currentLaunch().policy
	if p != nil && looksRefused(res) {
		s.mu.Lock()
		first := !s.refusalNoted
		s.refusalNoted = true
		s.mu.Unlock()
		if first {
			if note == nil {
				note = &SandboxNote{Policy: p.Name()}
			}
			note.Refused = refusalText(p)
		}
	}
	res.Sandbox = note
}

// refusalSigns are what a refusal of the sandbox leaves in a failed run's error or
// stderr: Python's exceptions for EACCES and EPERM, the C library's and the shell's
// words for them, a name lookup without UDP, and the proxy's refusal.
var refusalSigns = []string{"PermissionError", "Permission denied", "Operation not permitted",
	"Temporary failure in name resolution", "not allowed by repl-mcp's sandbox"}

func looksRefused(res *Result) bool {
	text := res.Stderr
	if res.Error != nil {
		text += "\n" + *res.Error
	}
	return slices.ContainsFunc(refusalSigns, func(sign string) bool { return strings.Contains(text, sign) })
}

// refusalText says which sandbox may have refused a run and how to widen it.
func refusalText(p *sandbox.Policy) string {
	if p.Codex {
		return fmt.Sprintf(msgCodexRefused, p.Name())
	}
	writes := "only in the worker's temp directory"
	if p.Mode == sandbox.WorkspaceWrite {
		writes = "only beneath " + strings.Join(userRoots(p), ", ") + " and the worker's temp directory"
	}
	return fmt.Sprintf(msgSandboxRefused, p.Name(), writes, p.NetworkText())
}

// userRoots are p's writable roots less the devices every sandbox may write.
func userRoots(p *sandbox.Policy) []string {
	var roots []string
	for _, r := range p.WritableRoots {
		if !slices.Contains(sandbox.SystemWritable, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// sandboxHealth is the sandbox of a session whose worker is w (nil for none).
func (s *Session) sandboxHealth(w *process) SandboxHealth {
	set := s.cfg.Sandbox
	h := SandboxHealth{Mode: string(set.Mode), Policy: string(sandbox.FullAccess), Network: (*sandbox.Policy)(nil).NetworkText(),
		LandlockABI: set.Enforcement.LandlockABI, AllowedDomains: orEmpty(set.Domains), NotEnforced: orEmpty(set.Enforcement.NotEnforced),
		Limits: orEmpty(set.Enforcement.Limits)}
	if h.Mode == "" {
		h.Mode = string(sandbox.FullAccess)
	}
	l := s.worker.currentLaunch()
	p := l.policy
	if w != nil && w.policy != nil {
		p = w.policy.WithRoot(w.proc.TempDir())
	}
	switch {
	case set.Mode == sandbox.InheritCodex && !s.worker.hasPolicy():
		h.Policy = msgAwaitingCodex
		return h
	case p == nil:
		return h
	}
	h.Policy, h.WritableRoots, h.Network = p.Name(), p.WritableRoots, p.NetworkText()
	h.NotEnforced = append(slices.Clone(h.NotEnforced), p.NotEnforced...)
	return h
}

// orEmpty is xs, or an empty list for none: health's lists are never null.
func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// hasPolicy says whether a call has set the policy (inherit-codex).
func (l *lifecycle) hasPolicy() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.policySet
}

// executionModeText is health's execution_mode for a session under p.
func executionModeText(mode sandbox.Mode) string {
	if mode == "" || mode == sandbox.FullAccess {
		return executionTrusted
	}
	return "sandboxed-local (--sandbox " + string(mode) + "); see sandbox"
}

// MayWrite says whether the server may write in dir, a real path, on session id's
// behalf: anywhere under full access, else only beneath the writable roots of the
// session's sandbox (its live worker's temp directory and code cache included).
// artifact_save, python_session_export and their helpers in cells ask it, so that a
// sandboxed cell cannot have the server write where the cell itself may not.
func (m *Manager) MayWrite(id, dir string) error {
	s, err := m.Session(id)
	if err != nil {
		if !m.cfg.Sandbox.Sandboxed() {
			return nil
		}
		return err
	}
	p := s.worker.currentLaunch().policy
	if w := s.worker.view(); w.proc != nil && w.proc.policy != nil {
		p = w.proc.policy.WithRoot(w.proc.proc.TempDir())
	}
	if p == nil {
		return nil
	}
	for _, root := range p.WritableRoots {
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		if root == "/" || dir == root || strings.HasPrefix(dir, strings.TrimSuffix(root, "/")+"/") {
			return nil
		}
	}
	return fmt.Errorf(msgSandboxWrite, p.Name(), strings.Join(userRoots(p), ", "), dir)
}
