package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The spare figure (issue 26, point 1): `reset=True` followed by a trivial cell, and
// python_session_open followed by a trivial cell in the new session, each timed from
// the first request to the cell's reply. Its floor is a warm trivial cell in the same
// server, timed beside each round: what the pair would cost if a new worker were free.
// Before each timed round the bench waits, untimed and bounded by spareWait, until
// python_health reports a spare ready, as an agent's reset comes after some thinking;
// a server without a spare (an older build, --no-spare-worker) gets spareIdle instead,
// so both start from an idle server. The target is absolute: 15 ms p50 each.
const (
	spareRounds = 15
	spareWait   = 5 * time.Second
	spareIdle   = 300 * time.Millisecond
	spareTarget = 15 * time.Millisecond
)

// spareFigure is the spare's measurements.
type spareFigure struct {
	reset, open, floor []time.Duration
	// withSpare counts the rounds that found a spare ready.
	withSpare, rounds int
	err               error
}

// measureSpare runs the rounds in one server in b.dir, alternating a reset round and
// an open round, each followed by a warm cell for the floor.
func (b *bench) measureSpare(ctx context.Context) (f spareFigure) {
	s, err := startServer(ctx, b.dir, b.cfg.Binary, b.cfg.Python)
	if err != nil {
		f.err = err
		return f
	}
	defer b.stopServer(s, "spare session") // notes any worker or spare that outlives it
	if _, err := s.initialize(ctx); err != nil {
		f.err = err
		return f
	}
	if _, _, err := s.execute(ctx, trivialCode, cellTimeout); err != nil {
		f.err = fmt.Errorf("first cell: %w", err)
		return f
	}
	for i := 0; i < spareRounds; i++ {
		for _, open := range []bool{false, true} {
			ready, err := s.waitSpare(ctx)
			if err != nil {
				f.err = err
				return f
			}
			f.rounds++
			if ready {
				f.withSpare++
			}
			var took time.Duration
			if open {
				took, err = s.openAndCell(ctx, b.dir, fmt.Sprintf("bench-%d", i))
			} else {
				took, err = s.resetAndCell(ctx)
			}
			if err != nil {
				f.err = err
				return f
			}
			_, floor, err := s.execute(ctx, trivialCode, cellTimeout)
			if err != nil {
				f.err = fmt.Errorf("floor cell: %w", err)
				return f
			}
			f.floor = append(f.floor, floor)
			if open {
				f.open = append(f.open, took)
			} else {
				f.reset = append(f.reset, took)
			}
		}
	}
	return f
}

// resetAndCell times execute_python with reset=True and a trivial cell.
func (s *mcpServer) resetAndCell(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if _, err := s.callCell(ctx, map[string]any{"code": trivialCode, "reset": true, "timeout": cellTimeout.Seconds()}); err != nil {
		return 0, fmt.Errorf("reset cell: %w", err)
	}
	return time.Since(start), nil
}

// openAndCell times python_session_open in dir and a trivial cell in the new
// session; closing the session afterwards is not timed.
func (s *mcpServer) openAndCell(ctx context.Context, dir, name string) (time.Duration, error) {
	start := time.Now()
	res, _, err := s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_session_open", "arguments": map[string]any{"name": name, "project": dir}})
	if err != nil {
		return 0, err
	}
	var opened struct {
		IsError    bool `json:"isError"`
		Structured struct {
			SessionID string `json:"session_id"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &opened); err != nil || opened.IsError || opened.Structured.SessionID == "" {
		return 0, fmt.Errorf("python_session_open: %v %.300s", err, res)
	}
	id := opened.Structured.SessionID
	if _, err := s.callCell(ctx, map[string]any{"code": trivialCode, "session_id": id, "timeout": cellTimeout.Seconds()}); err != nil {
		return 0, fmt.Errorf("new session's cell: %w", err)
	}
	took := time.Since(start)
	_, _, err = s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_session_close", "arguments": map[string]any{"session_id": id}})
	return took, err
}

// callCell runs execute_python with args; a cell that did not succeed is an error.
func (s *mcpServer) callCell(ctx context.Context, args map[string]any) (cellResult, error) {
	res, _, err := s.request(ctx, cellTimeout+cellSlack, "tools/call", map[string]any{"name": "execute_python", "arguments": args})
	if err != nil {
		return cellResult{}, err
	}
	var r cellResult
	if err := json.Unmarshal(res, &r); err != nil {
		return r, fmt.Errorf("undecodable result: %w", err)
	}
	if r.IsError || !r.Structured.Success {
		return r, fmt.Errorf("did not succeed: %.300s", res)
	}
	return r, checkTrivial(r)
}

// waitSpare waits until python_health reports the default session's spare ready,
// at most spareWait, and says whether it did. A server whose health has no spare
// enabled is given spareIdle instead.
func (s *mcpServer) waitSpare(ctx context.Context) (bool, error) {
	deadline := time.Now().Add(spareWait)
	for {
		res, _, err := s.request(ctx, requestTimeout, "tools/call",
			map[string]any{"name": "python_health", "arguments": map[string]any{}})
		if err != nil {
			return false, err
		}
		var h struct {
			Structured struct {
				Server struct {
					Spare *struct {
						Enabled bool `json:"enabled"`
						Ready   bool `json:"ready"`
					} `json:"spare"`
				} `json:"server"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(res, &h); err != nil {
			return false, fmt.Errorf("python_health: %w", err)
		}
		switch sp := h.Structured.Server.Spare; {
		case sp == nil || !sp.Enabled:
			return false, sleep(ctx, spareIdle)
		case sp.Ready:
			return true, nil
		case time.Now().After(deadline):
			return false, nil
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return false, err
		}
	}
}

// spareRows are the two spare figures beside the warm cell measured between them.
func (r *report) spareRows(f spareFigure) {
	floor := percentile(f.floor, 50)
	for _, fig := range []struct {
		name    string
		samples []time.Duration
	}{
		{"reset=True + trivial cell, p50", f.reset},
		{"python_session_open + trivial cell, p50", f.open},
	} {
		x := row{figure: fig.name, target: "<= " + fmtDur(spareTarget)}
		if f.err != nil || len(fig.samples) == 0 {
			x.value = notMeasured(errors.Join(f.err, errors.New("no round")))
			r.rows = append(r.rows, fill(x))
			continue
		}
		p50 := percentile(fig.samples, 50)
		x.value = fmtDur(p50)
		x.baseline = fmtDur(floor) + " warm cell p50"
		x.ratio = fmtRatio(durRatio(p50, floor))
		x.met = yesNo(p50 <= spareTarget)
		r.rows = append(r.rows, fill(x))
	}
	if f.rounds > 0 {
		r.notes = append(r.notes, fmt.Sprintf("spare: %d of %d rounds found a spare ready (the bench waits up to %v for one, untimed)", f.withSpare, f.rounds, spareWait))
	}
}
