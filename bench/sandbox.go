package main

import (
	"context"
	"fmt"
	"time"
)

// The sandbox figure (issue 33, point 7): what --sandbox workspace-write costs
// against full-access, measured side by side on the same interpreter. The cold start
// (server start to the first cell's result) of each alternates, in an order swapped
// every round; the warm cells alternate one by one between a session of each, kept
// for the run. Before the rounds one untimed start of each fills its code cache (the
// sandboxed workers keep a cache of their own). Targets: the cold start at most 10 ms
// more than full-access's (p50 against p50), the warm cell within the noise (p50 at
// most 1.1x full-access's).
const (
	sandboxColdRounds = 7
	sandboxWarmCells  = 100
	sandboxColdExtra  = 10 * time.Millisecond
	sandboxWarmRatio  = 1.1
)

// sandboxArgs are the sandboxed side's server arguments.
var sandboxArgs = []string{"--sandbox", "workspace-write", "--no-spare-worker"}

// sandboxFigure is the sandbox's measurements: index 0 full-access, 1 workspace-write.
type sandboxFigure struct {
	cold [2][]time.Duration
	warm [2][]time.Duration
	err  error
}

// sandboxServerArgs are the extra arguments of each side's servers.
func sandboxServerArgs(side int) []string {
	if side == 1 {
		return sandboxArgs
	}
	return []string{"--no-spare-worker"}
}

func (b *bench) measureSandbox(ctx context.Context) (f sandboxFigure) {
	for side := range 2 { // fill each side's code cache, untimed
		if _, err := b.sandboxCold(ctx, side); err != nil {
			f.err = fmt.Errorf("warm-up start (%s): %w", sandboxSide(side), err)
			return f
		}
	}
	for i := range sandboxColdRounds {
		for _, side := range []int{i % 2, 1 - i%2} {
			took, err := b.sandboxCold(ctx, side)
			if err != nil {
				f.err = fmt.Errorf("cold start (%s): %w", sandboxSide(side), err)
				return f
			}
			f.cold[side] = append(f.cold[side], took)
		}
	}
	var servers [2]*mcpServer
	for side := range 2 {
		s, err := startServerEnv(ctx, b.dir, b.cfg.Binary, b.cfg.Python, nil, sandboxServerArgs(side)...)
		if err != nil {
			f.err = err
			return f
		}
		defer b.stopServer(s, "sandbox warm session ("+sandboxSide(side)+")")
		if _, err := s.initialize(ctx); err != nil {
			f.err = err
			return f
		}
		if _, _, err := s.execute(ctx, trivialCode, cellTimeout); err != nil {
			f.err = fmt.Errorf("first cell (%s): %w", sandboxSide(side), err)
			return f
		}
		servers[side] = s
	}
	for i := range sandboxWarmCells {
		for _, side := range []int{i % 2, 1 - i%2} {
			r, took, err := servers[side].execute(ctx, trivialCode, cellTimeout)
			if err == nil {
				err = checkTrivial(r)
			}
			if err != nil {
				f.err = fmt.Errorf("warm cell (%s): %w", sandboxSide(side), err)
				return f
			}
			f.warm[side] = append(f.warm[side], took)
		}
	}
	return f
}

func sandboxSide(side int) string {
	if side == 1 {
		return "workspace-write"
	}
	return "full-access"
}

// sandboxCold times one server start to its first cell's result.
func (b *bench) sandboxCold(ctx context.Context, side int) (time.Duration, error) {
	start := time.Now()
	s, err := startServerEnv(ctx, b.dir, b.cfg.Binary, b.cfg.Python, nil, sandboxServerArgs(side)...)
	if err != nil {
		return 0, err
	}
	defer b.stopServer(s, "sandbox cold run ("+sandboxSide(side)+")")
	if _, err := s.initialize(ctx); err != nil {
		return 0, err
	}
	r, _, err := s.execute(ctx, trivialCode, cellTimeout)
	took := time.Since(start)
	if err == nil {
		err = checkTrivial(r)
	}
	return took, err
}

// sandboxRows are the two sandbox figures beside full-access's, measured alongside.
func (r *report) sandboxRows(f sandboxFigure) {
	cold := row{figure: "cold start, --sandbox workspace-write, p50", target: "<= full-access + " + fmtDur(sandboxColdExtra)}
	warm := row{figure: "warm trivial cell, --sandbox workspace-write, p50", target: fmt.Sprintf("<= %.1fx full-access", sandboxWarmRatio)}
	if f.err != nil || len(f.cold[1]) == 0 || len(f.warm[1]) == 0 {
		cold.value, warm.value = notMeasured(f.err), notMeasured(f.err)
		r.rows = append(r.rows, fill(cold), fill(warm))
		return
	}
	full, boxed := percentile(f.cold[0], 50), percentile(f.cold[1], 50)
	cold.value, cold.baseline = fmtDur(boxed), fmtDur(full)+" full-access p50"
	cold.ratio = fmtRatio(durRatio(boxed, full))
	cold.met = yesNo(boxed-full <= sandboxColdExtra)
	full, boxed = percentile(f.warm[0], 50), percentile(f.warm[1], 50)
	warm.value, warm.baseline = fmtDur(boxed), fmtDur(full)+" full-access p50"
	warm.ratio = fmtRatio(durRatio(boxed, full))
	warm.met = yesNo(durRatio(boxed, full) <= sandboxWarmRatio)
	r.rows = append(r.rows, fill(cold), fill(warm))
	r.notes = append(r.notes, fmt.Sprintf("sandbox: %d cold starts and %d warm cells of each, alternating with full-access in the same run", len(f.cold[1]), len(f.warm[1])))
}
