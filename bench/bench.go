package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The cells and programs measured.
const (
	trivialCode = "1 + 1"
	floodCode   = "for i in range(1_000_000): print(i)"

	// floorLoop is the bare pipe baseline: read a JSON string of code, exec it in
	// one namespace, answer with one line.
	floorLoop = `import json, sys
ns = {}
readline, write = sys.stdin.readline, sys.stdout.write
while True:
    line = readline()
    if not line:
        break
    exec(json.loads(line), ns)
    write('"ok"\n')
`
)

// Bounds of the measurements, chosen to keep a run well under two minutes.
const (
	floorWarmup    = 50
	cellTimeout    = 10 * time.Second
	floodTimeout   = 60 * time.Second
	floodRuns      = 3
	floodBudget    = 25 * time.Second // no further flood run once this much is spent
	idleWait       = 200 * time.Millisecond
	startTimeout   = 20 * time.Second // one bare Python start
	leakGrace      = 3 * time.Second  // for the server's children after it exits
	baselineRunCap = 30 * time.Second // one plain-Python flood
)

var errNoProcfs = errors.New("not measured: no /proc on " + runtime.GOOS)

// errSkipped is a figure left out by -figures: neither measured nor missing.
var errSkipped = errors.New("skipped by -figures")

// bench runs every figure once; it is used by one goroutine.
type bench struct {
	cfg      config
	dir      string // a scratch working directory for every child, with no .venv
	progress io.Writer
	notes    *notes
	// serverEnv is added to the environment of the servers coldOnce starts (-compare
	// gives each binary a cache directory of its own).
	serverEnv []string
}

// coldRun is one cold start: process start to the first cell's result.
type coldRun struct {
	total, init, cell time.Duration
}

// floodRun is one output flood through repl-mcp.
type floodRun struct {
	took      time.Duration
	serverMs  float64
	truncated bool
	size      int
}

// measurements are the raw figures of one run; each group has its own error.
type measurements struct {
	// The bare pipe floor, timed in the same rounds as what it is the floor of: one
	// round trip after each warm cell (floor), one after each round trip of the worker
	// alone (floorAlone). A floor measured as a block of its own, seconds apart from
	// its figure, meets another load on these machines (and a pipe loop that stays hot
	// in the caches), and made the warm ratio look three times worse than it is.
	floor, floorAlone []time.Duration
	floorErr          error

	workerAlone    []time.Duration // the worker over its own protocol, no server
	workerAloneErr error

	// Bare Python starts: to exit without imports, to a line printed after the
	// worker's imports (the cold baseline: like the cold figure it ends when the
	// process answers, not when it has exited), and to exit after those imports.
	bare, imports, importsExit          []time.Duration
	bareErr, importsErr, importsExitErr error

	cold    []coldRun
	coldErr error

	tools   int
	idle    memStat
	idleErr error

	sandbox sandboxFigure

	warmup      time.Duration // the first cell of the warm session: it starts the worker
	afterWarmup memStat       // server RSS after it
	warm        []time.Duration
	warmServer  []float64 // elapsed_ms the server reported for each warm cell
	warmErr     error

	afterCells    memStat
	afterCellsErr error

	worker     workerInfo
	workerErr  error
	processMem []string // "guardian pid 12: 5.1 MiB" and the like

	flood          []floodRun
	floodErr       error
	floodBase      []time.Duration
	floodBaseErr   error
	beforeFlood    memStat
	afterFlood     memStat
	floodMemErr    error
	shutdownReport string

	broker brokerFigure

	artifacts artifactFigure

	spare spareFigure

	cells     dataFigure
	notebook  notebookFigure
	snapshots snapshotFigure
}

func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(b.progress, "bench: "+format+"\n", args...)
}

// run measures everything, in an order that puts each baseline next to its figure.
// Figures that -figures leaves out carry errSkipped.
func (b *bench) run(ctx context.Context) *measurements {
	m := &measurements{}
	var floor *child // the bare pipe loop, nil when it could not start
	if b.cfg.Figures.has("warm") {
		b.say("floor: a Python exec loop on a bare pipe, %d warm-up round trips", floorWarmup)
		floor, m.floorErr = b.startFloor(ctx)
		if floor != nil {
			defer func() {
				if _, err := floor.stop(); err != nil {
					b.notes.add("floor: " + err.Error())
				}
			}()
		}
		b.say("worker alone: %d round trips over the worker's own protocol, each beside a bare pipe round trip", b.cfg.N)
		m.workerAlone, m.workerAloneErr = b.measureWorker(ctx, b.floorBeside(ctx, floor, m, &m.floorAlone))
	} else {
		m.floorErr, m.workerAloneErr = errSkipped, errSkipped
	}
	if b.cfg.Figures.has("cold") {
		b.say("cold: %d server starts to the first cell's result, each beside bare Python starts", b.cfg.ColdRuns)
		b.measureCold(ctx, m)
	} else {
		m.bareErr, m.importsErr, m.importsExitErr, m.coldErr = errSkipped, errSkipped, errSkipped, errSkipped
	}
	if b.cfg.Figures.has("warm") {
		b.say("warm: idle RSS, %d trivial cells each beside a bare pipe round trip, output flood", b.cfg.N)
		b.measureSession(ctx, m, b.floorBeside(ctx, floor, m, &m.floor))
		b.say("baseline: the flood loop in plain Python to /dev/null")
		m.floodBase, m.floodBaseErr = b.measureFloodBaseline(ctx)
	} else {
		for _, p := range []*error{&m.idleErr, &m.warmErr, &m.afterCellsErr, &m.workerErr, &m.floodErr, &m.floodMemErr, &m.floodBaseErr} {
			*p = errSkipped
		}
	}
	if b.cfg.Figures.has("broker") {
		b.say("broker: %d echo calls from a go-sdk client, then %d mcp.call from a cell, to the same fixture server", brokerCalls, brokerCalls)
		m.broker = b.measureBroker(ctx)
	} else {
		m.broker.directErr, m.broker.cellErr = errSkipped, errSkipped
	}
	if b.cfg.Figures.has("artifacts") {
		b.say("artifacts: up to %d uploads of a %d-byte artifact from a cell, each read back in %d-byte ranges", artifactRuns, artifactBytes, artifactRange)
		m.artifacts = b.measureArtifacts(ctx)
	} else {
		m.artifacts.err = errSkipped
	}
	if b.cfg.Figures.has("sandbox") {
		b.say("sandbox: %d cold starts and %d warm cells each of --sandbox workspace-write and full-access, alternating", sandboxColdRounds, sandboxWarmCells)
		m.sandbox = b.measureSandbox(ctx)
	} else {
		m.sandbox.err = errSkipped
	}
	if b.cfg.Figures.has("spare") {
		b.say("spare: %d rounds each of reset=True and python_session_open, each with a trivial cell, beside a warm cell", spareRounds)
		m.spare = b.measureSpare(ctx)
	} else {
		m.spare.err = errSkipped
	}
	if b.cfg.Figures.has("cells") {
		b.say("cells: %d interleaved rounds of %d data cells, each beside the same cell in a bare exec loop", dataRounds, len(dataCells))
		m.cells = b.measureDataCells(ctx)
	} else {
		m.cells.err = errSkipped
	}
	if b.cfg.Figures.has("notebook") {
		b.say("notebook: trivial and 100 KB cells after %d and %d cells, with --notebook-dir and without, %d rounds each", notebookSmall, notebookFill, notebookRounds)
		m.notebook = b.measureNotebook(ctx)
	} else {
		m.notebook.err = errSkipped
	}
	if b.cfg.Figures.has("snapshots") {
		b.say("snapshots: a 1 GiB DataFrame and 10,000 variables saved and restored, cells with snapshots on and off, cells during a pass")
		m.snapshots = b.measureSnapshots(ctx)
	} else {
		m.snapshots.err = errSkipped
	}
	return m
}

// measureFloor times b.cfg.N round trips of the bare pipe loop, after its warm-up, in
// one block: the peers' floor, whose servers are timed in rounds of their own.
func (b *bench) measureFloor(ctx context.Context) ([]time.Duration, error) {
	c, err := b.startFloor(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if _, err := c.stop(); err != nil {
			b.notes.add("floor: " + err.Error())
		}
	}()
	return floorTrips(ctx, c, b.cfg.N)
}

// startFloor starts the bare pipe loop and runs its warm-up round trips.
func (b *bench) startFloor(ctx context.Context) (*child, error) {
	c, err := startChild(ctx, "python exec loop", b.dir, b.cfg.Python, "-u", "-c", floorLoop)
	if err != nil {
		return nil, err
	}
	if _, err := floorTrips(ctx, c, floorWarmup); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// floorBeside returns the step a figure's loop runs beside each of its samples: one
// bare pipe round trip, appended to *samples. The first failure is m.floorErr, and
// the floor is not timed again; the figure goes on without it.
func (b *bench) floorBeside(ctx context.Context, floor *child, m *measurements, samples *[]time.Duration) func() {
	return func() {
		if floor == nil || m.floorErr != nil {
			return
		}
		took, err := floorTrips(ctx, floor, 1)
		if err != nil {
			m.floorErr = fmt.Errorf("bare pipe round trip: %w", err)
			return
		}
		*samples = append(*samples, took...)
	}
}

// measureCold interleaves, ColdRuns times, a bare Python start, one with the
// worker's imports and a cold server start, so that a change in the machine's load
// weighs on each series alike. A series stops at its first failure.
func (b *bench) measureCold(ctx context.Context, m *measurements) {
	imports, err := workerImports()
	if err != nil {
		m.importsErr, m.importsExitErr = err, err
	}
	// A code cache of the bench's own, filled by one untimed start: the user's is shared
	// with every other build of the worker on the machine, and one of other sources
	// replaces it, so that each start would compile the worker (about 0.2 s more).
	if b.serverEnv == nil {
		b.serverEnv = []string{"XDG_CACHE_HOME=" + filepath.Join(b.dir, "cache")}
		if _, err := b.coldOnce(ctx); err != nil {
			m.coldErr = wrapf(err, "the untimed start that fills the code cache")
		}
	}
	for i := 0; i < b.cfg.ColdRuns; i++ {
		if m.bareErr == nil {
			took, err := runOnce(ctx, b.dir, startTimeout, nil, b.cfg.Python, "-c", "pass")
			m.bare, m.bareErr = append(m.bare, took), wrapf(err, "python -c pass")
		}
		if m.importsErr == nil {
			took, err := b.importsReady(ctx, imports)
			m.imports, m.importsErr = append(m.imports, took), wrapf(err, "python -c 'import <worker imports>; print()'")
		}
		if m.importsExitErr == nil {
			took, err := runOnce(ctx, b.dir, startTimeout, nil, b.cfg.Python, "-c", imports)
			m.importsExit, m.importsExitErr = append(m.importsExit, took), wrapf(err, "python -c 'import <worker imports>'")
		}
		if m.coldErr == nil {
			run, err := b.coldOnce(ctx)
			m.cold, m.coldErr = append(m.cold, run), wrapf(err, fmt.Sprintf("cold run %d", i+1))
		}
	}
}

// importsReady times a bare Python start with the worker's imports up to the line
// it prints once they are done.
func (b *bench) importsReady(ctx context.Context, imports string) (time.Duration, error) {
	start := time.Now()
	c, err := startChild(ctx, "python -c 'import ...'", b.dir, b.cfg.Python, "-u", "-c", imports+"\nsys.stdout.write('ready\\n')")
	if err != nil {
		return 0, err
	}
	line, err := c.readLine(ctx, time.Now().Add(startTimeout))
	took := time.Since(start)
	if _, stopErr := c.stop(); err == nil {
		err = stopErr
	}
	if err == nil && string(line) != "ready" {
		err = fmt.Errorf("printed %.100q, not ready", line)
	}
	if err != nil {
		return 0, err
	}
	return took, nil
}

func wrapf(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (b *bench) coldOnce(ctx context.Context) (coldRun, error) {
	start := time.Now()
	s, err := startServerEnv(ctx, b.dir, b.cfg.Binary, b.cfg.Python, b.serverEnv)
	if err != nil {
		return coldRun{}, err
	}
	defer b.stopServer(s, "cold run")
	if _, err := s.initialize(ctx); err != nil {
		return coldRun{}, err
	}
	initDone := time.Since(start)
	r, _, err := s.execute(ctx, trivialCode, cellTimeout)
	total := time.Since(start)
	if err != nil {
		return coldRun{}, err
	}
	if err := checkTrivial(r); err != nil {
		return coldRun{}, err
	}
	return coldRun{total: total, init: initDone, cell: total - initDone}, nil
}

func checkTrivial(r cellResult) error {
	if r.Structured.ReturnValue == nil || *r.Structured.ReturnValue != "2" {
		got := "null"
		if r.Structured.ReturnValue != nil {
			got = fmt.Sprintf("%q", *r.Structured.ReturnValue)
		}
		return fmt.Errorf("execute_python %q returned %s, want \"2\"", trivialCode, got)
	}
	return nil
}

// measureSession runs the long session: idle RSS, warm cells, RSS after them, the
// worker and guardian, then the flood and RSS around it.
func (b *bench) measureSession(ctx context.Context, m *measurements, beside func()) {
	fail := func(err error) {
		for _, p := range []*error{&m.idleErr, &m.warmErr, &m.afterCellsErr, &m.workerErr, &m.floodErr, &m.floodMemErr} {
			if *p == nil {
				*p = err
			}
		}
	}
	s, err := startServer(ctx, b.dir, b.cfg.Binary, b.cfg.Python)
	if err != nil {
		fail(err)
		return
	}
	defer func() { m.shutdownReport = b.stopServer(s, "warm session") }()
	if _, err := s.initialize(ctx); err != nil {
		fail(err)
		return
	}
	if m.tools, err = s.listTools(ctx); err != nil {
		fail(err)
		return
	}
	// python_health too, as a client's first look does: it starts no worker.
	if _, _, err := s.request(ctx, requestTimeout, "tools/call",
		map[string]any{"name": "python_health", "arguments": map[string]any{}}); err != nil {
		fail(err)
		return
	}
	if err := sleep(ctx, idleWait); err != nil {
		fail(err)
		return
	}
	m.idle, m.idleErr = readMem(s.pid())

	m.warmErr = b.warmCells(ctx, s, m, beside)
	m.afterCells, m.afterCellsErr = readMem(s.pid())
	if m.warmErr == nil {
		m.worker, m.workerErr = s.health(ctx)
		if m.workerErr == nil && m.worker.executable != b.cfg.Python {
			b.notes.add(fmt.Sprintf("the worker reports sys.executable %q, the bench measured %q", m.worker.executable, b.cfg.Python))
		}
		m.processMem = b.childMem(s, m.worker.pid)
	} else {
		m.workerErr = m.warmErr
	}

	m.beforeFlood, m.floodMemErr = readMem(s.pid())
	m.flood, m.floodErr = b.floods(ctx, s)
	if m.floodMemErr == nil {
		m.afterFlood, m.floodMemErr = readMem(s.pid())
	}
}

// warmCells runs the warm-up cell, then N timed cells, each followed by one run of
// beside (the floor's round trip): cell and floor alternate, so that neither runs twice
// in a row, hot from its own previous round trip.
func (b *bench) warmCells(ctx context.Context, s *mcpServer, m *measurements, beside func()) error {
	r, took, err := s.execute(ctx, trivialCode, cellTimeout)
	if err != nil {
		return fmt.Errorf("warm-up cell: %w", err)
	}
	if err := checkTrivial(r); err != nil {
		return err
	}
	m.warmup = took
	m.afterWarmup, _ = readMem(s.pid())
	for i := 0; i < b.cfg.N; i++ {
		r, took, err := s.execute(ctx, trivialCode, cellTimeout)
		if err == nil {
			err = checkTrivial(r)
		}
		if err != nil {
			return fmt.Errorf("warm cell %d: %w", i+1, err)
		}
		m.warm = append(m.warm, took)
		m.warmServer = append(m.warmServer, r.Structured.ElapsedMs)
		beside()
	}
	return nil
}

// childMem describes the RSS of the server's descendants: guardians and the worker.
func (b *bench) childMem(s *mcpServer, workerPid int) []string {
	procs, err := descendants(s.pid())
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range procs {
		mem, err := readMem(p.pid)
		if err != nil {
			continue
		}
		role := "child"
		switch {
		case p.pid == workerPid:
			role = "worker"
		case p.comm == shortComm(b.cfg.Binary):
			role = "guardian"
		}
		out = append(out, fmt.Sprintf("%s pid %d (%s): RSS %s", role, p.pid, p.comm, mib(mem.rss)))
	}
	return out
}

func (b *bench) floods(ctx context.Context, s *mcpServer) ([]floodRun, error) {
	var runs []floodRun
	var spent time.Duration
	for i := 0; i < floodRuns && spent < floodBudget; i++ {
		r, took, err := s.execute(ctx, floodCode, floodTimeout)
		if err != nil {
			return runs, fmt.Errorf("flood run %d: %w", i+1, err)
		}
		spent += took
		runs = append(runs, floodRun{took: took, serverMs: r.Structured.ElapsedMs, truncated: r.Structured.Truncated.Stdout, size: r.size})
	}
	return runs, nil
}

func (b *bench) measureFloodBaseline(ctx context.Context) ([]time.Duration, error) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	var out []time.Duration
	for i := 0; i < floodRuns; i++ {
		took, err := runOnce(ctx, b.dir, baselineRunCap, null, b.cfg.Python, "-c", floodCode)
		if err != nil {
			return nil, fmt.Errorf("python -c %q: %w", floodCode, err)
		}
		out = append(out, took)
	}
	return out, nil
}

// stopServer stops a server, then makes sure none of its guardians or workers
// outlive it: they are given leakGrace, then reported and killed. It returns a line
// about the shutdown.
func (b *bench) stopServer(s *mcpServer, label string) string {
	procs, procErr := descendants(s.pid())
	rep, err := s.stop()
	if err != nil {
		b.notes.add(label + ": " + err.Error())
	}
	var line string
	switch {
	case rep.onEOF:
		line = fmt.Sprintf("ended %v after stdin EOF (%v)", rep.took.Round(time.Millisecond), exitText(rep.waitErr))
	default:
		line = fmt.Sprintf("did not exit within %v of stdin EOF; stopped by %s", eofGrace, rep.signal)
		b.notes.add(fmt.Sprintf("%s: the server did not exit within %v of stdin EOF; the bench sent %s", label, eofGrace, rep.signal))
	}
	if rep.onEOF && rep.waitErr != nil {
		b.notes.add(fmt.Sprintf("%s: the server ended with %v", label, rep.waitErr))
	}
	if s.stderr.Len() > 0 {
		b.notes.add(fmt.Sprintf("%s: the server wrote to stderr; it ends: %s", label, lastLines(s.stderr.String(), 3)))
	}
	if procErr == nil {
		b.reapLeaks(label, procs)
	}
	// Whatever is left in the group the bench made for the server is the bench's to
	// end (where there is no /proc to report it first).
	s.signalGroup(syscall.SIGKILL)
	return line
}

// reapLeaks gives the server's former descendants leakGrace to exit, then reports
// and kills those still running.
func (b *bench) reapLeaks(label string, procs []procID) {
	deadline := time.Now().Add(leakGrace)
	for {
		var alive []procID
		for _, p := range procs {
			if p.alive() {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				b.notes.add(fmt.Sprintf("%s: %s (pid %d) outlived the server by %v; the bench killed it", label, p.comm, p.pid, leakGrace))
				p.kill()
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shortComm is the kernel's command name for a binary: its base name, cut to 15 bytes.
func shortComm(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if len(base) > 15 {
		base = base[:15]
	}
	return base
}

// notes are odd observations, in order, each counted once per occurrence.
type notes struct {
	order []string
	count map[string]int
}

func (n *notes) add(s string) {
	if n.count == nil {
		n.count = map[string]int{}
	}
	if n.count[s] == 0 {
		n.order = append(n.order, s)
	}
	n.count[s]++
}

func (n *notes) lines() []string {
	var out []string
	for _, s := range n.order {
		if c := n.count[s]; c > 1 {
			s = fmt.Sprintf("%s (%d times)", s, c)
		}
		out = append(out, s)
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
