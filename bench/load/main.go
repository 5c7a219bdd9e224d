package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/internal/atomicfile"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// config is the command line.
type config struct {
	binary, python, out string
	clients             []int
	cells, soak         int
	budget              time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseArgs(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.binary, "binary", "./bin/repl-mcp", "the repl-mcp binary")
	fs.StringVar(&cfg.python, "python", "python3", "the interpreter of the workers")
	fs.StringVar(&cfg.out, "out", "", "also write the report to this file")
	clients := fs.String("clients", "8,32,64", "HTTP scenarios: concurrent clients each (over 32, two clients share a session)")
	fs.IntVar(&cfg.cells, "cells", 200, "cells per HTTP client")
	fs.IntVar(&cfg.soak, "soak", 20_000, "cells of the stdio soak (0: none)")
	fs.DurationVar(&cfg.budget, "budget", 15*time.Minute, "upper bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	for _, f := range strings.Split(*clients, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("-clients: %q is not a count of clients", f)
		}
		cfg.clients = append(cfg.clients, n)
	}
	if cfg.cells < 1 || cfg.soak < 0 || fs.NArg() > 0 {
		return cfg, errors.New("-cells must be at least 1, -soak at least 0, and no other arguments")
	}
	return cfg, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	if cfg.binary, err = filepath.Abs(cfg.binary); err != nil {
		return err
	}
	if cfg.python, err = exec.LookPath(cfg.python); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.budget)
	defer cancel()
	dir, err := os.MkdirTemp("", "repl-mcp-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rep := &report{started: time.Now(), host: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()), cfg: cfg}
	rep.version, _ = output(ctx, cfg.binary, "--version")
	rep.pyVersion, _ = output(ctx, cfg.python, "-c", "import platform; print(platform.python_version())")
	rep.loadStart = loadAverage()
	var failures []error
	for _, n := range cfg.clients {
		fmt.Fprintf(stderr, "load: HTTP, %d clients, %d cells each\n", n, cfg.cells)
		r := runHTTP(ctx, cfg, dir, n)
		rep.http = append(rep.http, r)
		if r.err != nil {
			failures = append(failures, fmt.Errorf("%d clients: %w", n, r.err))
		}
	}
	if cfg.soak > 0 {
		fmt.Fprintf(stderr, "load: stdio soak, %d cells\n", cfg.soak)
		rep.soak = runSoak(ctx, cfg, dir)
		if rep.soak.err != nil {
			failures = append(failures, fmt.Errorf("soak: %w", rep.soak.err))
		}
	}
	rep.loadEnd = loadAverage()
	text := rep.String()
	fmt.Fprint(stdout, text)
	if cfg.out != "" {
		if err := atomicfile.WriteFile(cfg.out, []byte(text), 0o644); err != nil {
			return err
		}
	}
	wrong := 0
	for _, r := range rep.http {
		wrong += r.wrong
	}
	wrong += rep.soak.wrong
	if wrong > 0 {
		failures = append(failures, fmt.Errorf("%d wrong answers", wrong))
	}
	return errors.Join(failures...)
}

// httpResult is one HTTP scenario.
type httpResult struct {
	clients, sessions, cells int
	lat                      []time.Duration
	wall                     time.Duration
	wrong, busy, unsaved     int
	why                      string   // a marker of an output not saved
	examples                 []string // the first wrong answers
	idle, peak, after        snapshot // before the clients, the peak under load, after they hung up
	err                      error
}

// runHTTP is one scenario: a new server, n clients (sessions: n, or n/2 over 32),
// each running cfg.cells cells, then every client hangs up.
func runHTTP(ctx context.Context, cfg config, dir string, n int) (r httpResult) {
	r.idle, r.peak, r.after = notMeasured, notMeasured, notMeasured
	r.clients, r.sessions = n, n
	if n > 32 {
		r.sessions = (n + 1) / 2
	}
	scratch, err := os.MkdirTemp(dir, "http-")
	if err != nil {
		r.err = err
		return r
	}
	srv, err := startHTTP(ctx, cfg.binary, cfg.python, scratch)
	if err != nil {
		r.err = err
		return r
	}
	defer srv.stop()
	setup, err := srv.connect(ctx)
	if err != nil {
		r.err = err
		return r
	}
	// The default session is the first (a server holds 32 sessions, the default
	// included); the others are opened in the scratch project.
	ids := make([]string, r.sessions)
	for i := range ids {
		if ids[i], err = openSession(ctx, setup, i, scratch); err != nil {
			setup.Close()
			r.err = err
			return r
		}
	}
	setup.Close()
	r.idle = measure(srv.pid)

	var mu sync.Mutex
	var ran, gone sync.WaitGroup // the clients' cells; the clients themselves
	loaded := make(chan struct{})
	hangUp := make(chan struct{})
	peak := make(chan snapshot, 1)
	go func() { // the peak under load, sampled
		p := measure(srv.pid)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-loaded:
				peak <- p.max(measure(srv.pid))
				return
			case <-tick.C:
				p = p.max(measure(srv.pid))
			}
		}
	}()
	start := time.Now()
	var errs []error
	for c := range n {
		ran.Add(1)
		gone.Add(1)
		go func() {
			defer gone.Done()
			session, err := srv.connect(ctx)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				ran.Done()
				return
			}
			defer session.Close() // the hang-up, once every client has run its cells
			defer func() { <-hangUp }()
			defer ran.Done()
			cl := &caller{mcp: session, client: c, session: ids[c%r.sessions]}
			for i := range cfg.cells {
				took, wrong, err := cl.cell(ctx, i)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("client %d cell %d: %w", c, i, err))
					mu.Unlock()
					return
				}
				r.lat = append(r.lat, took)
				if wrong != "" {
					r.wrong++
					if len(r.examples) < 5 {
						r.examples = append(r.examples, wrong)
					}
				}
				mu.Unlock()
			}
			mu.Lock()
			r.busy, r.unsaved = r.busy+cl.busy, r.unsaved+cl.unsaved
			if r.why == "" {
				r.why = cl.why
			}
			mu.Unlock()
		}()
	}
	ran.Wait()
	r.wall = time.Since(start)
	close(loaded)
	r.peak = <-peak
	close(hangUp)
	gone.Wait()
	sleep(context.Background(), 2*time.Second) // the server lets the hung-up MCP sessions go
	r.after = measure(srv.pid)
	r.cells = len(r.lat)
	r.err = errors.Join(errs...)
	return r
}

// notMeasured is a snapshot a scenario that failed first never took.
var notMeasured = snapshot{err: errors.New("not measured")}

// soakResult is the stdio soak.
type soakResult struct {
	blocks   []soakBlock
	wrong    int
	unsaved  int
	why      string
	examples []string
	lat      []time.Duration
	wall     time.Duration
	start    snapshot
	err      error
}

type soakBlock struct {
	p50  time.Duration
	snap snapshot
}

const soakBlockCells = 1000

func runSoak(ctx context.Context, cfg config, dir string) (r soakResult) {
	scratch, err := os.MkdirTemp(dir, "soak-")
	if err != nil {
		r.err = err
		return r
	}
	srv, err := startStdio(ctx, cfg.binary, cfg.python, scratch)
	if err != nil {
		r.err = err
		return r
	}
	defer srv.stop()
	r.start = measure(srv.pid())
	cl := &caller{mcp: srv.session}
	start := time.Now()
	var block []time.Duration
	for i := range cfg.soak {
		took, wrong, err := cl.cell(ctx, i)
		if err != nil {
			r.err = fmt.Errorf("cell %d: %w", i, err)
			break
		}
		r.lat = append(r.lat, took)
		block = append(block, took)
		if wrong != "" {
			r.wrong++
			if len(r.examples) < 5 {
				r.examples = append(r.examples, wrong)
			}
		}
		if len(block) == soakBlockCells || i == cfg.soak-1 {
			r.blocks = append(r.blocks, soakBlock{p50: percentile(block, 50), snap: measure(srv.pid())})
			block = block[:0]
		}
	}
	r.wall = time.Since(start)
	r.unsaved, r.why = cl.unsaved, cl.why
	return r
}

// openSession opens the i-th Python session of a scenario in dir, the default
// session for i 0, and warms it with a first cell.
func openSession(ctx context.Context, session *mcp.ClientSession, i int, dir string) (string, error) {
	setup := &caller{mcp: session}
	if i == 0 { // over HTTP even the default session is named by its id
		health, err := setup.call(ctx, "python_health", map[string]any{})
		if err != nil {
			return "", err
		}
		setup.session = health.Server.SessionID
	} else {
		name := fmt.Sprintf("load-%d", i)
		opened, err := setup.call(ctx, "python_session_open", map[string]any{"name": name, "project": dir})
		if err != nil {
			return "", err
		}
		if opened.SessionID == "" {
			got, _ := json.Marshal(opened)
			return "", fmt.Errorf("python_session_open %s gave no session_id: %.300s", name, got)
		}
		setup.session = opened.SessionID
	}
	if _, err := setup.call(ctx, "execute_python", map[string]any{"code": "1 + 1"}); err != nil {
		return "", err
	}
	return setup.session, nil
}

func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return strings.TrimSpace(string(out)), err
}
