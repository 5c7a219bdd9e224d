package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/internal/atomicfile"
)

// The comparison (-compare OLD): the candidate binary (-binary) against a baseline
// binary, each figure of the targets measured on both in the same rounds, their order
// swapped every round, so that a change in the machine's load weighs on both alike.
// It is how a change's effect is measured on a noisy machine: per round, each binary's
// warm p50 (its own warm session, kept for the whole run), one cold start of each, one
// idle server of each, and the floors of the same round (the bare pipe, the bare Python
// start with the worker's imports). Each figure is reported as the median over rounds
// with the rounds' range, and the candidate's ratio to the baseline as the median of the
// per-round ratios.

// compareSide is what one binary measured: a value per round.
type compareSide struct {
	warm []time.Duration // p50 of the round's warm cells
	cold []time.Duration
	idle []float64 // MiB
}

// compareRounds is the whole comparison.
type compareRounds struct {
	old, new compareSide
	floor    []time.Duration // p50 of the round's bare pipe round trips
	imports  []time.Duration // bare Python with the worker's imports, to ready
	err      error
}

// runCompare is the -compare command.
func runCompare(ctx context.Context, b *bench, cfg config, env environment, stdout io.Writer) error {
	baseline, baseVersion, err := resolveBinary(ctx, cfg.Compare)
	if err != nil {
		return err
	}
	cr := b.compare(ctx, baseline)
	env.loadEnd = loadText()
	var out strings.Builder
	fmt.Fprintf(&out, "repl-mcp bench: candidate against baseline, %d interleaved rounds\n", len(cr.new.warm))
	fmt.Fprintf(&out, "date:      %s\nhost:      %s\npython:    %s (%s)\n", env.start.UTC().Format(time.RFC3339), env.host, env.python, env.pythonVersion)
	fmt.Fprintf(&out, "baseline:  %s (%s)\ncandidate: %s (%s)\n", baseline, baseVersion, env.binary, env.binaryVersion)
	fmt.Fprintf(&out, "load:      %s at start, %s at end (1, 5, 15 min)\n", env.loadStart, env.loadEnd)
	fmt.Fprintf(&out, "per round: %d warm trivial cells on each binary's warm session and %d bare pipe round trips, one of each in turn (p50 of each), "+
		"one cold start of each, one bare Python start with the worker's imports, one idle server of each "+
		"(VmRSS after initialize, tools/list, python_health, %v)\n\n", cfg.Peers.RoundCells, cfg.Peers.RoundCells, idleWait)
	fmt.Fprintf(&out, "| figure | baseline: median [rounds' range] | candidate: median [rounds' range] | candidate/baseline, median of rounds [range] |\n|---|---|---|---|\n")
	durRow := func(name string, old, new []time.Duration) {
		fmt.Fprintf(&out, "| %s | %s | %s | %s |\n", name, durRange(old), durRange(new), ratioRange(durRatios(new, old)))
	}
	durRow("warm trivial cell, p50", cr.old.warm, cr.new.warm)
	fmt.Fprintf(&out, "| warm p50 / bare pipe p50 (floor %s [%s]) | %s | %s | |\n", fmtDur(median(cr.floor)), durSpan(cr.floor),
		ratioRange(durRatios(cr.old.warm, cr.floor)), ratioRange(durRatios(cr.new.warm, cr.floor)))
	durRow("cold start to first cell result", cr.old.cold, cr.new.cold)
	fmt.Fprintf(&out, "| cold / bare Python with the worker's imports (floor %s [%s]) | %s | %s | |\n", fmtDur(median(cr.imports)), durSpan(cr.imports),
		ratioRange(durRatios(cr.old.cold, cr.imports)), ratioRange(durRatios(cr.new.cold, cr.imports)))
	fmt.Fprintf(&out, "| idle server VmRSS | %s | %s | %s |\n", mibRange(cr.old.idle), mibRange(cr.new.idle), ratioRange(floatRatios(cr.new.idle, cr.old.idle)))
	if lines := b.notes.lines(); len(lines) > 0 {
		out.WriteString("\nnotes:\n")
		for _, l := range lines {
			out.WriteString("  - " + l + "\n")
		}
	}
	text := out.String()
	fmt.Fprint(stdout, text)
	if cfg.Out != "" {
		if err := atomicfile.WriteFile(cfg.Out, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	}
	return cr.err
}

// compare measures the rounds; it stops at the first failure, keeping what it has.
func (b *bench) compare(ctx context.Context, baseline string) *compareRounds {
	cr := &compareRounds{}
	binaries := [2]string{baseline, b.cfg.Binary}
	sides := [2]*compareSide{&cr.old, &cr.new}
	// A cache directory for each binary: two workers of different sources would
	// otherwise replace each other's compiled code, and every cold start would compile.
	var envs [2][]string
	for i, name := range []string{"baseline", "candidate"} {
		envs[i] = []string{"XDG_CACHE_HOME=" + filepath.Join(b.dir, "cache-"+name)}
	}
	imports, err := workerImports()
	if err != nil {
		cr.err = err
		return cr
	}
	floor, err := startChild(ctx, "python exec loop", b.dir, b.cfg.Python, "-u", "-c", floorLoop)
	if err != nil {
		cr.err = err
		return cr
	}
	defer floor.stop()
	var warm [2]*mcpServer
	for i, bin := range binaries {
		s, err := b.warmSession(ctx, bin, envs[i])
		if err != nil {
			cr.err = fmt.Errorf("warm session of %s: %w", bin, err)
			return cr
		}
		defer b.stopServer(s, "warm session of "+bin)
		warm[i] = s
	}
	if _, err := floorTrips(ctx, floor, floorWarmup); err != nil {
		cr.err = err
		return cr
	}
	cold := *b
	for round := 0; round < b.cfg.Peers.Rounds && cr.err == nil; round++ {
		b.say("compare: round %d of %d", round+1, b.cfg.Peers.Rounds)
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		var warmP50 [2]time.Duration
		var coldRun [2]coldRun
		var idle [2]memStat
		steps := []func() error{
			func() error {
				// Cell by cell, each binary's and a floor round trip in turn: the load
				// changes from one second to the next on these machines.
				var samples [2][]time.Duration
				var floorSamples []time.Duration
				for range b.cfg.Peers.RoundCells {
					for _, i := range order {
						took, err := roundCells(ctx, warm[i], 1)
						if err != nil {
							return err
						}
						samples[i] = append(samples[i], took...)
					}
					took, err := floorTrips(ctx, floor, 1)
					if err != nil {
						return err
					}
					floorSamples = append(floorSamples, took...)
				}
				warmP50[0], warmP50[1] = median(samples[0]), median(samples[1])
				cr.floor = append(cr.floor, median(floorSamples))
				return nil
			},
			func() error {
				took, err := b.importsReady(ctx, imports)
				cr.imports = append(cr.imports, took)
				return err
			},
			func() error {
				for _, i := range order {
					cold.cfg.Binary, cold.serverEnv = binaries[i], envs[i]
					run, err := cold.coldOnce(ctx)
					if err != nil {
						return fmt.Errorf("cold start of %s: %w", binaries[i], err)
					}
					coldRun[i] = run
				}
				return nil
			},
			func() error {
				for _, i := range order {
					m, err := b.idleServer(ctx, binaries[i], envs[i])
					if err != nil {
						return fmt.Errorf("idle server of %s: %w", binaries[i], err)
					}
					idle[i] = m
				}
				return nil
			},
		}
		for _, step := range steps {
			if cr.err = step(); cr.err != nil {
				return cr
			}
		}
		for i, side := range sides {
			side.warm = append(side.warm, warmP50[i])
			side.cold = append(side.cold, coldRun[i].total)
			side.idle = append(side.idle, float64(idle[i].rss)/(1<<20))
		}
	}
	return cr
}

// warmSession starts a server of binary and runs its first cell.
func (b *bench) warmSession(ctx context.Context, binary string, env []string) (*mcpServer, error) {
	s, err := startServerEnv(ctx, b.dir, binary, b.cfg.Python, env)
	if err != nil {
		return nil, err
	}
	if _, err := s.initialize(ctx); err == nil {
		if _, err = roundCells(ctx, s, floorWarmup); err == nil {
			return s, nil
		}
	}
	b.stopServer(s, "warm session of "+binary)
	return nil, err
}

// idleServer starts a server of binary and reads its RSS as the idle figure defines it.
func (b *bench) idleServer(ctx context.Context, binary string, env []string) (memStat, error) {
	s, err := startServerEnv(ctx, b.dir, binary, b.cfg.Python, env)
	if err != nil {
		return memStat{}, err
	}
	defer b.stopServer(s, "idle server of "+binary)
	return idleRSS(ctx, s)
}

// idleRSS is the idle figure: the server's VmRSS after initialize, tools/list and
// python_health (which starts no worker), and idleWait.
func idleRSS(ctx context.Context, s *mcpServer) (memStat, error) {
	if _, err := s.initialize(ctx); err != nil {
		return memStat{}, err
	}
	if _, err := s.listTools(ctx); err != nil {
		return memStat{}, err
	}
	if _, _, err := s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_health", "arguments": map[string]any{}}); err != nil {
		return memStat{}, err
	}
	if err := sleep(ctx, idleWait); err != nil {
		return memStat{}, err
	}
	return readMem(s.pid())
}

// roundCells runs n trivial cells and returns their round trips.
func roundCells(ctx context.Context, s *mcpServer, n int) ([]time.Duration, error) {
	samples := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		r, took, err := s.execute(ctx, trivialCode, cellTimeout)
		if err == nil {
			err = checkTrivial(r)
		}
		if err != nil {
			return nil, err
		}
		samples = append(samples, took)
	}
	return samples, nil
}

// floorTrips times n round trips of the bare pipe loop c.
func floorTrips(ctx context.Context, c *child, n int) ([]time.Duration, error) {
	line, _ := json.Marshal(trivialCode)
	samples := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		deadline := time.Now().Add(requestTimeout)
		start := time.Now()
		if err := c.writeLine(ctx, line, deadline); err != nil {
			return nil, err
		}
		reply, err := c.readLine(ctx, deadline)
		took := time.Since(start)
		if err != nil {
			return nil, err
		}
		if string(reply) != `"ok"` {
			return nil, fmt.Errorf("python exec loop answered %.200q", reply)
		}
		samples = append(samples, took)
	}
	return samples, nil
}

func durRatios(a, b []time.Duration) []float64 {
	out := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		out = append(out, durRatio(a[i], b[i]))
	}
	return out
}

func floatRatios(a, b []float64) []float64 {
	out := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		out = append(out, a[i]/b[i])
	}
	return out
}

// medianFloat is the nearest-rank median, as percentile's.
func medianFloat(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[max(0, (len(s)+1)/2-1)]
}

func durSpan(v []time.Duration) string {
	if len(v) == 0 {
		return "-"
	}
	return fmtDur(slices.Min(v)) + " to " + fmtDur(slices.Max(v))
}

func durRange(v []time.Duration) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s [%s]", fmtDur(median(v)), durSpan(v))
}

func mibRange(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB [%.1f to %.1f]", medianFloat(v), slices.Min(v), slices.Max(v))
}

func ratioRange(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx [%.2f to %.2f]", medianFloat(v), slices.Min(v), slices.Max(v))
}
