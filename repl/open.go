package repl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// defaultSessName is the default session's name.
const defaultSessName = "default"

// Where a session's interpreter comes from.
const (
	SourceExplicit      = "explicit"
	SourceProjectVenv   = "project_venv"
	SourceServerDefault = "server_default"
)

// OpenRequest is python_session_open's input.
type OpenRequest struct {
	Name    string
	Project string // relative to the server's project; empty: that project
	Python  string // empty: the project's .venv, else the server default
}

// Open validates the project and interpreter, probes the interpreter, and publishes
// a new lazy session. Nothing is published when any step fails or ctx ends first.
// A spare worker waiting for the same launch answers for the probe: it is that
// interpreter, running in that project, past a handshake that checks more than the
// probe does.
func (m *Manager) Open(ctx context.Context, req OpenRequest) (*Session, error) {
	if n := len(req.Name); n < 1 || n > maxNameBytes {
		return nil, errors.New(msgBadName)
	}
	select {
	case m.opening <- struct{}{}:
		defer func() { <-m.opening }()
	default:
		return nil, errors.New(msgOpeningFull)
	}
	env, err := m.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if env.probe = m.spares.probeInfo(m.cfg.launch(env)); env.probe == nil {
		if env.probe, err = probe(ctx, m.probeTimeout, env.python, env.project, m.cfg.Env, m.cfg.Executable, m.cfg.Sandbox.ProbePolicy()); err != nil {
			return nil, err
		}
	}
	return m.publish(ctx, req.Name, env)
}

// prepare does the filesystem part of an open, bounded by prepareTimeout: a hung
// network mount must not hold the request forever.
func (m *Manager) prepare(ctx context.Context, req OpenRequest) (sessionEnv, error) {
	type prepared struct {
		env sessionEnv
		err error
	}
	done := make(chan prepared, 1)
	go func() {
		env, err := m.selectEnvironment(req)
		done <- prepared{env, err}
	}()
	timer := time.NewTimer(prepareTimeout)
	defer timer.Stop()
	select {
	case p := <-done:
		return p.env, p.err
	case <-timer.C:
		return sessionEnv{}, errors.New(msgPrepareTimeout)
	case <-ctx.Done():
		return sessionEnv{}, errors.New(msgOpenCancelled)
	}
}

// selectEnvironment picks the interpreter with no silent fallback: an explicit
// python, else the project's .venv/bin/python if .venv exists at all (a broken one is
// an error, not "absent"), else the server default.
func (m *Manager) selectEnvironment(req OpenRequest) (sessionEnv, error) {
	project, err := canonicalProject(req.Project, m.cfg.Project)
	if err != nil {
		return sessionEnv{}, err
	}
	env := sessionEnv{project: project}
	rule := ""
	switch {
	case req.Python != "":
		env.python, env.source, rule = req.Python, SourceExplicit, chosenExplicitly
	default:
		venv := filepath.Join(project, ".venv")
		_, err := os.Lstat(venv)
		switch {
		case err == nil:
			env.python, env.source, rule = venvPython(venv), SourceProjectVenv, ChosenByVenv
			env.venvFix = msgVenvFixOpened
		case errors.Is(err, fs.ErrNotExist):
			env.python, env.source, rule = m.cfg.Python, SourceServerDefault, m.cfg.PythonSource
		default:
			return sessionEnv{}, fmt.Errorf("%s: %v", msgVenvUninspectable, err)
		}
	}
	if env.python, err = resolveInterpreter(env.python, project); err != nil {
		return sessionEnv{}, err
	}
	env.chosenBy = choiceWords(rule, env.python)
	return env, nil
}

func canonicalProject(project, base string) (string, error) {
	if !filepath.IsAbs(project) {
		project = filepath.Join(base, project)
	}
	canonical, err := filepath.EvalSymlinks(project)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: %s", msgNoProject, project)
		}
		return "", fmt.Errorf("%s: %v", msgNoProject, err)
	}
	info, err := os.Stat(canonical)
	if err != nil {
		return "", fmt.Errorf("%s: %v", msgNoProject, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s: %s", msgProjectNotDir, canonical)
	}
	return canonical, nil
}

// resolveInterpreter finds python as the contract says: absolute as is, a relative
// path with a separator against the project, a bare name on PATH. The path is not
// canonicalized, so a venv's bin/python symlink keeps the venv's identity.
func resolveInterpreter(python, project string) (string, error) {
	if !strings.ContainsRune(python, filepath.Separator) {
		found, err := exec.LookPath(python)
		if err != nil {
			return "", fmt.Errorf("%s: %s", msgNotOnPath, python)
		}
		return found, nil
	}
	if !filepath.IsAbs(python) {
		python = filepath.Join(project, python)
	}
	info, err := os.Stat(python)
	if err != nil {
		return "", fmt.Errorf("%s: %s", msgNoSuchPython, python)
	}
	if !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s: %s", msgNotExecutable, python)
	}
	return python, nil
}

// publish registers the session unless the limit is reached or the open was
// cancelled meanwhile.
func (m *Manager) publish(ctx context.Context, name string, env sessionEnv) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ctx.Err() != nil {
		return nil, errors.New(msgOpenCancelled)
	}
	if len(m.sessions) >= MaxSessions {
		return nil, errors.New(msgSessionLimit)
	}
	s := newSession(m.lifetime, name, m.serverID, &m.cfg, env, m.spares)
	m.attach(s, false)
	m.sessions[s.id] = s
	return s, nil
}

// CloseSession closes an opened session; the default session cannot be closed.
func (m *Manager) CloseSession(id string) (Health, error) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	switch {
	case !ok:
		m.mu.Unlock()
		return Health{}, errors.New(msgNoSuchSession)
	case s == m.def:
		m.mu.Unlock()
		return Health{}, errors.New(msgDefaultClose)
	}
	delete(m.sessions, id)
	m.mu.Unlock()
	s.discard = true // its snapshots go with it
	s.Close(closeGrace)
	return s.Health(), nil
}
