package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The notebook figure (issue 37, point 2): a cell's cost with --notebook-dir, beside
// the same cell in a server without it, at 10 and at notebookFill kept cells, for a
// trivial cell and for a cell that prints 100 KB. Two servers run side by side, each
// with two sessions (one of trivial cells, one of 100 KB cells), filled cell for cell
// in step, untimed; then notebookRounds rounds time one cell of each kind in each
// server, the servers' order swapped every round. The target: with the flag, a cell
// costs at most 1.25x the same cell without it, at 10 kept cells and at 1,000 alike
// (before, the live notebook was rendered whole and fsynced before every answer: a
// trivial cell went from 0.9 ms to 39-64 ms at 1,000 cells).
const (
	notebookRounds = 20
	notebookSmall  = 10
	notebookFill   = 1000
	notebookTarget = 1.25
	largeCellCode  = "print('x' * 100_000)"
)

// notebookKinds are the two cells, each in a session of its own.
var notebookKinds = []struct{ name, code string }{{"trivial", trivialCode}, {"100 KB", largeCellCode}}

// notebookFigure holds, by kind and then stage (0: 10 kept cells, 1: notebookFill),
// the timed cells of the server with the flag (live) and without it (plain).
type notebookFigure struct {
	live, plain [2][2][]time.Duration
	err         error
}

// notebookServer is one of the two servers and its two sessions' ids, by kind.
type notebookServer struct {
	*mcpServer
	sessions [2]string
	cells    [2]int // cells run in each session
}

func (b *bench) measureNotebook(ctx context.Context) (f notebookFigure) {
	dir := filepath.Join(b.dir, "notebooks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		f.err = err
		return f
	}
	var servers [2]*notebookServer // 0: plain, 1: --notebook-dir
	for i, args := range [][]string{nil, {"--notebook-dir", dir}} {
		cmd := exec.Command(b.cfg.Binary, append([]string{"--python", b.cfg.Python}, args...)...)
		cmd.Dir = b.dir
		c, err := startPiped(ctx, "repl-mcp", cmd)
		if err != nil {
			f.err = err
			return f
		}
		s := &notebookServer{mcpServer: &mcpServer{child: c}}
		defer b.stopServer(s.mcpServer, fmt.Sprintf("notebook server %d", i))
		if _, err := s.initialize(ctx); err != nil {
			f.err = err
			return f
		}
		for k, kind := range notebookKinds {
			if s.sessions[k], err = s.open(ctx, b.dir, "bench-"+kind.name); err != nil {
				f.err = err
				return f
			}
		}
		servers[i] = s
	}
	for stage, kept := range []int{notebookSmall, notebookFill} {
		for k, kind := range notebookKinds {
			// Filled in step: both servers meet the same load meanwhile.
			for servers[0].cells[k] < kept {
				for _, s := range servers {
					if _, err := s.cell(ctx, k, kind.code); err != nil {
						f.err = fmt.Errorf("filling the %s session to %d cells: %w", kind.name, kept, err)
						return f
					}
				}
			}
		}
		for round := range notebookRounds {
			for k, kind := range notebookKinds {
				for j := range servers {
					i := (j + round) % 2
					took, err := servers[i].cell(ctx, k, kind.code)
					if err != nil {
						f.err = fmt.Errorf("a timed %s cell: %w", kind.name, err)
						return f
					}
					if i == 1 {
						f.live[k][stage] = append(f.live[k][stage], took)
					} else {
						f.plain[k][stage] = append(f.plain[k][stage], took)
					}
				}
			}
		}
	}
	return f
}

// open opens a session in dir and returns its id.
func (s *notebookServer) open(ctx context.Context, dir, name string) (string, error) {
	res, _, err := s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_session_open", "arguments": map[string]any{"name": name, "project": dir}})
	if err != nil {
		return "", err
	}
	var opened struct {
		IsError    bool `json:"isError"`
		Structured struct {
			SessionID string `json:"session_id"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &opened); err != nil || opened.IsError || opened.Structured.SessionID == "" {
		return "", fmt.Errorf("python_session_open: %v %.300s", err, res)
	}
	return opened.Structured.SessionID, nil
}

// cell runs code in the session of kind k and returns the call's round trip.
func (s *notebookServer) cell(ctx context.Context, k int, code string) (time.Duration, error) {
	var r cellResult
	took, err := s.requestInto(ctx, cellTimeout+cellSlack, "tools/call", map[string]any{"name": "execute_python",
		"arguments": map[string]any{"code": code, "session_id": s.sessions[k], "timeout": cellTimeout.Seconds()}}, &r)
	if err != nil {
		return 0, err
	}
	if r.IsError || !r.Structured.Success {
		return 0, fmt.Errorf("execute_python %.40q did not succeed", code)
	}
	s.cells[k]++
	return took, nil
}

// notebookRows are the four figures: each kind at each stage, with the flag beside
// without it.
func (r *report) notebookRows(f notebookFigure) {
	for k, kind := range notebookKinds {
		for stage, kept := range []int{notebookSmall, notebookFill} {
			x := row{figure: fmt.Sprintf("--notebook-dir, %s cell after %d cells, p50", kind.name, kept),
				target: fmt.Sprintf("<= %.2fx without", notebookTarget)}
			live, plain := f.live[k][stage], f.plain[k][stage]
			if len(live) == 0 || len(plain) == 0 { // a figure cut short keeps what it measured
				x.value = notMeasured(errors.Join(f.err, errors.New("no round")))
				r.rows = append(r.rows, fill(x))
				continue
			}
			p50, base := percentile(live, 50), percentile(plain, 50)
			x.value = fmtDur(p50)
			x.baseline = fmtDur(base) + " without the flag"
			ratio := durRatio(p50, base)
			x.ratio = fmtRatio(ratio)
			x.met = yesNo(ratio <= notebookTarget)
			r.rows = append(r.rows, fill(x))
		}
	}
	if len(f.live[0][1]) > 0 && len(f.live[1][1]) > 0 {
		r.notes = append(r.notes, fmt.Sprintf("notebook: with the flag, p50 after %d cells over p50 after %d: trivial %s, 100 KB %s (%d timed rounds each, the servers' order swapped every round)",
			notebookFill, notebookSmall,
			fmtRatio(durRatio(percentile(f.live[0][1], 50), percentile(f.live[0][0], 50))),
			fmtRatio(durRatio(percentile(f.live[1][1], 50), percentile(f.live[1][0], 50))), notebookRounds))
	}
}
