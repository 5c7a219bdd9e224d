package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/sandbox"
)

// probeScript prints what the server needs to know about an interpreter, on one line.
const probeScript = `import json, platform, sys
print(json.dumps({"version": platform.python_version(), "executable": sys.executable, "major": sys.version_info[0], "minor": sys.version_info[1]}))`

// ProbeInfo is what an interpreter says about itself.
type ProbeInfo struct {
	Version    string `json:"version"`
	Executable string `json:"executable"`
	Major      int    `json:"major"`
	Minor      int    `json:"minor"`
}

// probe runs python under a guardian in dir and reads its self-description. The
// probe must also exit: one that prints valid JSON and then hangs is killed and
// fails, since it is not the interpreter it claims to be.
func probe(ctx context.Context, timeout time.Duration, python, dir string, env []string, exe string, policy *sandbox.Policy) (*ProbeInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer outR.Close()
	gp, err := guardian.Start(guardian.Config{
		Executable: exe,
		Spec:       guardian.Spec{Program: python, Args: []string{"-I", "-c", probeScript}, Env: env, Dir: dir, Sandbox: policy},
		Output:     outW,
	})
	outW.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", msgNotPython, err)
	}
	defer func() { gp.Kill(); gp.Wait() }()

	line := make(chan probeLine, 1)
	go func() { line <- readProbeOutput(outR) }()
	var got probeLine
	select {
	case got = <-line:
	case <-ctx.Done():
		return nil, probeContextError(ctx)
	}
	if got.err != nil {
		// Too much output, or none: nothing the probe does next changes that.
		return nil, got.err
	}
	select {
	case <-gp.Exited():
	case <-ctx.Done():
		return nil, probeContextError(ctx)
	}
	if exit := gp.ExitStatus(); exit.Code != 0 {
		return nil, fmt.Errorf("%s (probe %s)", msgNotPython, exit)
	}
	var info ProbeInfo
	if err := json.Unmarshal(got.text, &info); err != nil || info.Major == 0 {
		return nil, errors.New(msgNotPython)
	}
	if info.Major != 3 || info.Minor < 10 {
		return nil, fmt.Errorf("%s; %s is Python %s", msgTooOld, python, info.Version)
	}
	return &info, nil
}

type probeLine struct {
	text []byte
	err  error
}

// readProbeOutput reads what the probe prints until it closes its output, at most
// probeOutputLimit bytes, and returns its first line. More than the limit fails as
// soon as it has arrived, whether in one line or many.
func readProbeOutput(r *os.File) probeLine {
	out, err := io.ReadAll(io.LimitReader(r, probeOutputLimit+1))
	switch {
	case len(out) > probeOutputLimit:
		return probeLine{err: errors.New(msgProbeTooLarge)}
	case err != nil || len(bytes.TrimSpace(out)) == 0:
		return probeLine{err: errors.New(msgNotPython)}
	}
	first, _, _ := bytes.Cut(out, []byte{'\n'})
	return probeLine{text: first}
}

func probeContextError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New(msgProbeTimeout)
	}
	return errors.New(msgOpenCancelled)
}
