package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/cellops"
	"github.com/iota-uz/repl-mcp/guardian"
	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/worker"
)

// The worker alone is a diagnostic, not a target: the same trivial cell sent to the
// embedded worker over its own wire protocol (worker/PROTOCOL.md), with no Go
// server in between. It splits a warm cell's cost between Python and the server.

// startWorker starts the embedded worker as the server starts one: through a guardian
// (the repl-mcp binary under test, re-run), as python -u -c <bootstrap> with fd 3 and 4
// its protocol pipes and fd 1 and 2 (its native output) on /dev/null, the bundle
// written to its command pipe first; and waits for its ready frame. It has no code
// cache: the figure is the warm round trip, which the cache does not touch.
func startWorker(ctx context.Context, binary, dir, python string) (*child, error) {
	python, err := exec.LookPath(python)
	if err != nil {
		return nil, err
	}
	g, err := guardian.StartPiped(binary, guardian.Spec{
		Program: python,
		Args:    []string{"-u", "-c", worker.Bootstrap},
		Env:     workerEnv(),
		Dir:     dir,
	}, guardian.Pipes{Extra: []guardian.Direction{guardian.ToChild, guardian.FromChild}})
	if err != nil {
		return nil, fmt.Errorf("start python worker: %w", err)
	}
	c := newChild(ctx, "python worker", g.Pid(), g.Extra[0], g.Extra[1], &tailBuffer{limit: 16 << 10})
	go func() {
		c.waitErr = g.Wait() // the guardian exits once the worker has
		g.Close()
		close(c.done)
	}()
	deadline := time.Now().Add(requestTimeout)
	c.stdin.SetWriteDeadline(deadline)
	_, err = io.WriteString(c.stdin, worker.Bundle())
	var frame workerFrame
	if err == nil {
		frame, err = readFrame(ctx, c, deadline)
	} else {
		err = c.ioError(ctx, "write the bundle to", err)
	}
	if err == nil && frame.Type != "ready" {
		err = fmt.Errorf("the worker's first frame is %q, not ready", frame.Type)
	}
	if err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// workerImports is the program of the cold-start floor: the import statements the worker
// runs before its ready frame (worker.Imports), one a line, so that the floor loads
// what the worker loads and no more.
func workerImports() (string, error) {
	imports, err := worker.Imports()
	if err != nil {
		return "", fmt.Errorf("the worker's imports: %w", err)
	}
	return strings.Join(imports, "\n"), nil
}

// workerEnv is the bench's environment with the worker's own variables, as the server
// gives them.
func workerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REPL_MCP_") {
			env = append(env, kv)
		}
	}
	return append(env, "REPL_MCP_NO_BRIDGE=1", "REPL_MCP_WORKER_FDS=3,4", repl.WorkerLimitsEnv(cellops.Limits()))
}

type workerFrame struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Result struct {
		Success     bool    `json:"success"`
		ReturnValue *string `json:"return_value"`
		Error       *string `json:"error"`
	} `json:"result"`
}

func readFrame(ctx context.Context, c *child, deadline time.Time) (workerFrame, error) {
	line, err := c.readLine(ctx, deadline)
	if err != nil {
		return workerFrame{}, err
	}
	var f workerFrame
	if err := json.Unmarshal(line, &f); err != nil {
		return workerFrame{}, fmt.Errorf("the worker wrote a frame that is not JSON: %.200q", line)
	}
	return f, nil
}

// workerRoundTrip sends one execute frame and waits for its result frame.
func workerRoundTrip(ctx context.Context, c *child, seq int, code string) (time.Duration, error) {
	id := "bench-" + strconv.Itoa(seq)
	line, err := json.Marshal(map[string]any{"type": "execute", "id": id, "code": code, "timeout": cellTimeout.Seconds(), "barrier": "b" + id})
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(cellTimeout + cellSlack)
	start := time.Now()
	if err := c.writeLine(ctx, line, deadline); err != nil {
		return 0, err
	}
	for {
		f, err := readFrame(ctx, c, deadline)
		if err != nil {
			return 0, err
		}
		if f.Type != "result" || f.ID != id {
			continue
		}
		took := time.Since(start)
		if !f.Result.Success || f.Result.ReturnValue == nil || *f.Result.ReturnValue != "2" {
			return 0, fmt.Errorf("the worker's result for %q is not a success returning \"2\"", code)
		}
		return took, nil
	}
}

// measureWorker times the worker alone: warm-up round trips, then N timed ones, each
// followed by one run of beside (the floor's round trip), as warmCells does.
func (b *bench) measureWorker(ctx context.Context, beside func()) ([]time.Duration, error) {
	c, err := startWorker(ctx, b.cfg.Binary, b.dir, b.cfg.Python)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rep, err := c.stop(); err != nil {
			b.notes.add("worker alone: " + err.Error())
		} else if !rep.onEOF {
			b.notes.add(fmt.Sprintf("worker alone: the worker did not exit within %v of EOF on its command pipe; the bench sent %s", eofGrace, rep.signal))
		}
	}()
	samples := make([]time.Duration, 0, b.cfg.N)
	for i := 0; i < floorWarmup+b.cfg.N; i++ {
		took, err := workerRoundTrip(ctx, c, i, trivialCode)
		if err != nil {
			return nil, err
		}
		if i >= floorWarmup {
			samples = append(samples, took)
			beside()
		}
	}
	return samples, nil
}
