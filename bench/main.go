package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/iota-uz/repl-mcp/internal/atomicfile"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/internal/mcpfixture"
)

// config is the parsed command line.
type config struct {
	Binary string // the repl-mcp binary
	Python string // the interpreter; an absolute path once resolved
	// DataPython is the interpreter of the data cells (-figures cells), with pandas,
	// numpy and matplotlib.
	DataPython string
	N          int // round trips and warm cells
	ColdRuns   int
	Out        string // report file, if any
	Budget     time.Duration
	Figures    figureSet // the figure groups to measure; empty is all

	PeersMode bool   // -peers: the peers figure instead of the targets
	Compare   string // -compare: a baseline binary measured beside -binary, in interleaved rounds
	Peers     peerConfig
}

// usageError is a command line that cannot be parsed: exit status 2.
type usageError struct{ error }

func main() {
	if os.Getenv(fixtureEnv) == "1" {
		// Re-run by the bench itself as the downstream MCP server of the broker figure.
		// The fixture reads os.Args[1:] and wants none.
		os.Args = os.Args[:1]
		os.Exit(mcpfixture.Main())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
		return
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseArgs(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Binary, "binary", "./bin/repl-mcp", "the repl-mcp binary to measure")
	fs.StringVar(&cfg.Python, "python", "python3", "the Python interpreter for the server and every baseline")
	fs.StringVar(&cfg.DataPython, "data-python", defaultDataPython(), "the interpreter of the data cells, with pandas, numpy and matplotlib")
	fs.IntVar(&cfg.N, "n", 200, "bare pipe round trips and warm cells to time")
	fs.IntVar(&cfg.ColdRuns, "cold-runs", 7, "cold starts to time, and bare Python starts for their baseline")
	fs.StringVar(&cfg.Out, "out", "", "also write the report to this file")
	fs.DurationVar(&cfg.Budget, "budget", 135*time.Second, "upper bound on the whole run")
	fs.BoolVar(&cfg.PeersMode, "peers", false, "measure repl-mcp beside its peers (make bench-peers) instead of the targets")
	fs.StringVar(&cfg.Compare, "compare", "", "a baseline repl-mcp binary: measure -binary against it in interleaved rounds (-rounds, -round-cells) instead of the targets")
	fs.StringVar(&cfg.Peers.Venvs, "venvs", "bench", "with -peers: the directory of the peers' venvs (.venv-peers-*)")
	fs.IntVar(&cfg.Peers.Rounds, "rounds", 10, "with -peers or -compare: interleaved rounds")
	fs.IntVar(&cfg.Peers.RoundCells, "round-cells", 30, "with -peers or -compare: cells of each server per round")
	fs.IntVar(&cfg.Peers.SlowCells, "slow-cells", 2, "with -peers: cells per round at jupyter-mcp-server's default interval")
	fs.IntVar(&cfg.Peers.PeerColdRun, "peer-cold-runs", 3, "with -peers: cold starts of each server")
	figures := fs.String("figures", "all", "figure groups to measure: all, or a comma list of "+strings.Join(figureGroups, ", "))
	if err := fs.Parse(args); err != nil {
		return cfg, usageError{err}
	}
	switch {
	case fs.NArg() > 0:
		return cfg, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case cfg.N < 1:
		return cfg, usageError{errors.New("-n must be at least 1")}
	case cfg.ColdRuns < 1:
		return cfg, usageError{errors.New("-cold-runs must be at least 1")}
	case cfg.Peers.Rounds < 1 || cfg.Peers.RoundCells < 1 || cfg.Peers.SlowCells < 0 || cfg.Peers.PeerColdRun < 1:
		return cfg, usageError{errors.New("-rounds, -round-cells and -peer-cold-runs must be at least 1, -slow-cells at least 0")}
	case cfg.PeersMode && cfg.Compare != "":
		return cfg, usageError{errors.New("-peers and -compare are two different runs")}
	case cfg.Budget <= 0:
		return cfg, usageError{errors.New("-budget must be positive")}
	}
	var err error
	if cfg.Peers.Venvs, err = filepath.Abs(cfg.Peers.Venvs); err != nil {
		return cfg, usageError{err}
	}
	if cfg.DataPython, err = filepath.Abs(cfg.DataPython); err != nil {
		return cfg, usageError{err}
	}
	if cfg.Figures, err = parseFigures(*figures); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// run is the whole command: measure, print the report, write it if asked, and fail
// only if some figure could not be measured at all.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	env := environment{start: time.Now(), host: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	if cfg.Binary, env.binaryVersion, err = resolveBinary(ctx, cfg.Binary); err != nil {
		return err
	}
	if cfg.Python, env.pythonVersion, err = resolvePython(ctx, cfg.Python); err != nil {
		return err
	}
	env.binary, env.python = cfg.Binary, cfg.Python
	env.loadStart = loadText()
	dir, err := os.MkdirTemp("", "repl-mcp-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	b := &bench{cfg: cfg, dir: dir, progress: stderr, notes: &notes{}}
	switch {
	case cfg.PeersMode:
		return runPeersReport(ctx, b, cfg, env, stdout)
	case cfg.Compare != "":
		return runCompare(ctx, b, cfg, env, stdout)
	}
	m := b.run(ctx)
	env.loadEnd = loadText()
	if busy(env.loadStart) || busy(env.loadEnd) {
		b.notes.add(fmt.Sprintf("the machine was busy (load %s at start, %s at end, %d CPUs): other work competed for the CPUs; "+
			"the ratios, measured side by side, are more telling than the absolute times", env.loadStart, env.loadEnd, runtime.NumCPU()))
	}
	if ctx.Err() != nil {
		b.notes.add(fmt.Sprintf("the run was cut short: %v (budget %v)", context.Cause(ctx), cfg.Budget))
	}
	rep := buildReport(cfg, env, m, b.notes.lines())
	text := rep.String()
	fmt.Fprint(stdout, text)
	if cfg.Out != "" {
		if err := atomicfile.WriteFile(cfg.Out, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	}
	if len(rep.unmeasured) > 0 {
		return fmt.Errorf("could not measure:\n  %s", strings.Join(rep.unmeasured, "\n  "))
	}
	return nil
}

// The figure groups of -figures: warm is the bare pipe, the worker alone, the warm
// session (warm cells, server RSS, output flood) and the plain-Python flood; cold is
// the cold starts beside bare Python starts; broker is a cell's mcp.call against a
// direct go-sdk call; artifacts is a 16 MiB artifact uploaded from a cell and read
// back in ranges, against the same bytes through a file.
// spare is reset and new-session cells on the spare worker (bench/spare.go).
// cells is the data cells against a bare exec loop (bench/datacells.go).
// notebook is a cell's cost with --notebook-dir beside without (bench/notebook.go).
// snapshots are the durable sessions' figures (bench/snapshot.go).
// sandbox is a cold start and warm cells under --sandbox workspace-write beside
// full-access's (bench/sandbox.go).
var figureGroups = []string{"warm", "cold", "broker", "artifacts", "spare", "cells", "notebook", "snapshots", "sandbox"}

// figureSet is the figure groups chosen; the empty set is all of them.
type figureSet map[string]bool

func parseFigures(s string) (figureSet, error) {
	if s == "all" {
		return nil, nil
	}
	set := figureSet{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(figureGroups, name) {
			return nil, fmt.Errorf("-figures: unknown group %q (use all, or a comma list of %s)", name, strings.Join(figureGroups, ", "))
		}
		set[name] = true
	}
	return set, nil
}

// has says whether group is measured.
func (f figureSet) has(group string) bool { return len(f) == 0 || f[group] }

func loadText() string {
	load, err := loadAverage()
	if err != nil {
		return "unknown"
	}
	return load
}

// busy says whether the 1-minute load reaches half the CPUs.
func busy(load string) bool {
	var one float64
	if _, err := fmt.Sscan(load, &one); err != nil {
		return false
	}
	return one >= float64(runtime.NumCPU())/2
}

// resolveBinary makes the binary's path absolute and asks it for its version.
func resolveBinary(ctx context.Context, path string) (abs, version string, err error) {
	if abs, err = filepath.Abs(path); err != nil {
		return "", "", err
	}
	if info, err := os.Stat(abs); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return "", "", fmt.Errorf("the repl-mcp binary %s is not an executable file (run make build)", abs)
	}
	out, err := output(ctx, abs, "--version")
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %w", abs, err)
	}
	return abs, strings.TrimSpace(out), nil
}

// resolvePython finds the interpreter once, through any shim (pyenv's python3 is a
// shell script), as the absolute sys.executable every measurement then uses.
func resolvePython(ctx context.Context, name string) (abs, version string, err error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", "", fmt.Errorf("python interpreter %q: %w", name, err)
	}
	out, err := output(ctx, path, "-c", "import platform, sys; print(sys.executable); print(platform.python_version())")
	if err != nil {
		return "", "", fmt.Errorf("python interpreter %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !filepath.IsAbs(lines[0]) {
		return "", "", fmt.Errorf("python interpreter %s reports no usable sys.executable: %q", path, out)
	}
	return lines[0], lines[1], nil
}

// output runs a short command with a deadline, killing its process group after it.
func output(ctx context.Context, program string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			return "", fmt.Errorf("%w: %s", err, lastLines(s, 3))
		}
		return "", err
	}
	return stdout.String(), nil
}

// runPeersReport is the -peers command: measure, print the markdown report and write it
// if asked; it fails only when repl-mcp itself or the floor could not be measured.
func runPeersReport(ctx context.Context, b *bench, cfg config, env environment, stdout io.Writer) error {
	pm := b.runPeers(ctx)
	env.loadEnd = loadText()
	if busy(env.loadStart) || busy(env.loadEnd) {
		b.notes.add(fmt.Sprintf("the machine was busy (load %s at start, %s at end, %d CPUs): the ratios, measured side by side in interleaved rounds, are more telling than the absolute times",
			env.loadStart, env.loadEnd, runtime.NumCPU()))
	}
	if ctx.Err() != nil {
		b.notes.add(fmt.Sprintf("the run was cut short: %v (budget %v)", context.Cause(ctx), cfg.Budget))
	}
	text := peersReport(cfg, env, pm, b.notes.lines())
	fmt.Fprint(stdout, text)
	if cfg.Out != "" {
		if err := atomicfile.WriteFile(cfg.Out, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	}
	switch {
	case pm.floorErr != nil:
		return fmt.Errorf("could not measure the floor: %w", pm.floorErr)
	case len(pm.peers[0].warm) == 0:
		err := pm.peers[0].warmErr
		if err == nil {
			err = context.Cause(ctx) // cut short before its first round
		}
		return fmt.Errorf("could not measure repl-mcp: %w", err)
	}
	return nil
}
