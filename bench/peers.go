package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The peers figure (-peers, `make bench-peers`): repl-mcp beside the comparable MCP
// Python servers, each driven over stdio by the same lean synchronous client (mcpServer:
// one request at a time, no SDK), with the same cell, in interleaved rounds, beside the
// bare pipe floor measured in the same run. Each peer lives in a venv of its own under
// -venvs, made by `make peers-deps` from the lock files in bench/.

// peerSpec is one server measured, and how to run a cell on it.
type peerSpec struct {
	name    string   // as the report names it
	program string   // absolute path; empty for a peer that cannot run (err says why)
	args    []string // after program
	tool    string
	codeKey string         // the tool's argument that takes the code: "code" unless set
	env     []string       // added to the bench's environment
	args0   map[string]any // the tool's arguments besides the code
	// every names the peers sharing one process: a variant (jupyter-mcp-server at its
	// default progress interval) runs its cells on the process of the peer it names.
	variantOf string
	err       error
}

// peerResult is what one peer measured.
type peerResult struct {
	spec       peerSpec
	cold       []time.Duration
	coldErr    error
	warm       []time.Duration
	warmErr    error
	idle       uint64 // RSS of the process tree after initialize and tools/list
	after      uint64 // RSS of the process tree after the warm cells
	cells      int    // cells the process ran before `after`
	tree       []string
	memErr     error
	stopReport string
}

// Bounds of the peers run.
const (
	peerCellTimeout  = 60 * time.Second
	peerStartTimeout = 120 * time.Second // jupyter-mcp-server starts a kernel before it answers
	jupyterReadyWait = 120 * time.Second
)

// peerConfig is the part of config the peers figure reads.
type peerConfig struct {
	Venvs       string // the directory holding .venv-peers-*
	Rounds      int
	RoundCells  int // cells of each peer per round
	SlowCells   int // cells per round of the slow variant (jupyter-mcp-server's default interval)
	PeerColdRun int
}

// jupyter is the Jupyter server jupyter-mcp-server talks to: started and stopped by
// the bench, on 127.0.0.1, with a token of its own and its files in a scratch directory.
type jupyter struct {
	c       *child
	url     string
	token   string
	started time.Duration // from start to /api/status answering
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startJupyter(ctx context.Context, venv, dir string) (*jupyter, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var raw [16]byte
	rand.Read(raw[:])
	token := hex.EncodeToString(raw[:])
	root := filepath.Join(dir, "jupyter-root")
	for _, d := range []string{root, filepath.Join(dir, "jupyter-config"), filepath.Join(dir, "jupyter-runtime")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	args := []string{"lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
		fmt.Sprintf("--ServerApp.port=%d", port), "--ServerApp.port_retries=0",
		"--IdentityProvider.token=" + token, "--ServerApp.root_dir=" + root}
	cmd := exec.Command(filepath.Join(venv, "bin", "jupyter"), args...)
	cmd.Dir = root
	// Its configuration and runtime files in the scratch directory, not the user's.
	cmd.Env = append(os.Environ(), "JUPYTER_CONFIG_DIR="+filepath.Join(dir, "jupyter-config"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "jupyter-runtime"))
	start := time.Now()
	c, err := startPiped(ctx, "jupyter lab", cmd)
	if err != nil {
		return nil, err
	}
	go func() { // it logs to stderr; stdout must not fill
		buf := make([]byte, 4096)
		for {
			if _, err := c.stdout.Read(buf); err != nil {
				return
			}
		}
	}()
	j := &jupyter{c: c, url: fmt.Sprintf("http://127.0.0.1:%d", port), token: token}
	deadline := time.Now().Add(jupyterReadyWait)
	for {
		if err := j.get(ctx, "/api/status", nil); err == nil {
			j.started = time.Since(start)
			return j, nil
		} else if time.Now().After(deadline) || ctx.Err() != nil || c.waitFor(0) {
			c.stop()
			return nil, fmt.Errorf("jupyter lab did not answer /api/status within %v: %v; stderr ends: %s", jupyterReadyWait, err, lastLines(c.stderr.String(), 3))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (j *jupyter) do(ctx context.Context, method, path string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, j.url+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+j.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if into != nil {
		return json.NewDecoder(resp.Body).Decode(into)
	}
	return nil
}

func (j *jupyter) get(ctx context.Context, path string, into any) error {
	return j.do(ctx, http.MethodGet, path, into)
}

// dropKernels shuts down every kernel and session: each jupyter-mcp-server start makes
// a new kernel, and one left running would weigh on the next peer's figures.
func (j *jupyter) dropKernels(ctx context.Context) {
	var sessions []struct{ ID string }
	if j.get(ctx, "/api/sessions", &sessions) == nil {
		for _, s := range sessions {
			j.do(ctx, http.MethodDelete, "/api/sessions/"+s.ID, nil)
		}
	}
	var kernels []struct{ ID string }
	if j.get(ctx, "/api/kernels", &kernels) == nil {
		for _, k := range kernels {
			j.do(ctx, http.MethodDelete, "/api/kernels/"+k.ID, nil)
		}
	}
}

// peerSpecs are the servers measured: repl-mcp first, then the peers found under venvs.
func peerSpecs(cfg config, dir string, j *jupyter, jupyterErr error) []peerSpec {
	venv := func(name string) string { return filepath.Join(cfg.Peers.Venvs, ".venv-peers-"+name) }
	// repl-mcp with a code cache of its own (see measureCold), filled before the cold starts.
	ours := peerSpec{name: "repl-mcp", program: cfg.Binary, args: []string{"--python", cfg.Python},
		tool: "execute_python", args0: map[string]any{"timeout": 30}, env: []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}}
	interp := peerSpec{name: "mcp-python-interpreter 1.2.3 (inline)",
		program: filepath.Join(venv("interpreter"), "bin", "mcp-python-interpreter"),
		tool:    "run_python_code", args0: map[string]any{"execution_mode": "inline"}}
	// jupyter-mcp-server polls for the result every progress_interval/5 seconds, at
	// least 0.05 s and at most 1 s; the interval is an integer, so 1 (0.2 s) is its
	// fastest setting, and its default, 5, polls once a second.
	jfast := peerSpec{name: "jupyter-mcp-server 2.2.4 (progress_interval 1, its fastest)",
		program: filepath.Join(venv("jupyter"), "bin", "jupyter-mcp-server"),
		tool:    "execute_code", args0: map[string]any{"timeout": 30, "progress_interval": 1}}
	jslow := jfast
	jslow.name, jslow.variantOf = "jupyter-mcp-server 2.2.4 (default interval)", jfast.name
	jslow.args0 = map[string]any{"timeout": 30}
	for _, p := range []*peerSpec{&interp, &jfast} {
		if _, err := os.Stat(p.program); err != nil {
			p.err = fmt.Errorf("not installed (%v): run make peers-deps", err)
		}
	}
	if jfast.err == nil {
		if jupyterErr != nil {
			jfast.err = fmt.Errorf("its Jupyter server did not start: %w", jupyterErr)
		} else {
			jfast.args = []string{"start", "--transport", "stdio", "--jupyter-url", j.url, "--jupyter-token", j.token}
		}
	}
	jslow.err, jslow.args = jfast.err, jfast.args
	// posit's mcp-repl runs the first python on PATH (here the bench's interpreter, as
	// its report says); its default sandbox needs bubblewrap, so it runs without one,
	// as the other peers do.
	posit := peerSpec{name: "posit mcp-repl 0.3.0 (--sandbox danger-full-access)",
		program: filepath.Join(venv("posit"), "bin", "mcp-repl"),
		args:    []string{"--interpreter", "python", "--sandbox", "danger-full-access"},
		tool:    "repl", codeKey: "input"}
	if _, err := os.Stat(posit.program); err != nil {
		posit.err = fmt.Errorf("not installed (%v): run make peers-deps", err)
	}
	return []peerSpec{ours, interp, jfast, jslow, posit}
}

// peerCell runs code through a peer's tool and checks that its result shows want.
func peerCell(ctx context.Context, s *mcpServer, p peerSpec, code, want string) (time.Duration, error) {
	key := p.codeKey
	if key == "" {
		key = "code"
	}
	args := map[string]any{key: code}
	for k, v := range p.args0 {
		args[k] = v
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured json.RawMessage `json:"structuredContent"`
	}
	took, err := s.requestInto(ctx, peerCellTimeout, "tools/call", map[string]any{"name": p.tool, "arguments": args}, &res)
	if err != nil {
		return 0, err
	}
	var text strings.Builder
	for _, c := range res.Content {
		text.WriteString(c.Text)
	}
	text.Write(res.Structured)
	if res.IsError || !strings.Contains(text.String(), want) || strings.Contains(text.String(), "Error") {
		return 0, fmt.Errorf("%s %q: no %q in the result (isError %v): %.300s", p.tool, code, want, res.IsError, text.String())
	}
	return took, nil
}

// startPeer starts a peer's process and performs the MCP handshake and tools/list.
func startPeer(ctx context.Context, dir string, p peerSpec) (*mcpServer, error) {
	if p.err != nil {
		return nil, p.err
	}
	cmd := exec.Command(p.program, p.args...)
	cmd.Dir = dir
	if p.env != nil {
		cmd.Env = append(os.Environ(), p.env...)
	}
	c, err := startPiped(ctx, p.name, cmd)
	if err != nil {
		return nil, err
	}
	s := &mcpServer{child: c}
	fail := func(err error) (*mcpServer, error) {
		s.stop()
		s.signalGroup(syscall.SIGKILL)
		if tail := lastLines(c.stderr.String(), 3); tail != "" {
			err = fmt.Errorf("%w; stderr ends: %s", err, tail)
		}
		return nil, err
	}
	res, _, err := s.request(ctx, peerStartTimeout, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "repl-mcp-bench", "version": "1"},
	})
	if err != nil {
		return fail(err)
	}
	if !strings.Contains(string(res), "protocolVersion") {
		return fail(fmt.Errorf("initialize: no protocolVersion in %.200s", res))
	}
	if err := s.notify(ctx, "notifications/initialized"); err != nil {
		return fail(err)
	}
	if _, err := s.listTools(ctx); err != nil {
		return fail(err)
	}
	return s, nil
}

// treeRSS sums the RSS of a process and every process below it.
func treeRSS(pid int) (uint64, []string, error) {
	m, err := readMem(pid)
	if err != nil {
		return 0, nil, err
	}
	total := m.rss
	procs, err := descendants(pid)
	if err != nil {
		return 0, nil, err
	}
	comm := "?"
	if st, err := readStat(pid); err == nil {
		comm = st.comm
	}
	parts := []string{fmt.Sprintf("%s %s", comm, mib(m.rss))}
	for _, p := range procs {
		if pm, err := readMem(p.pid); err == nil {
			total += pm.rss
			parts = append(parts, fmt.Sprintf("%s %s", p.comm, mib(pm.rss)))
		}
	}
	return total, parts, nil
}

// peersMeasurements is the whole peers run.
type peersMeasurements struct {
	floor       []time.Duration
	floorErr    error
	bare        []time.Duration // python -c pass, beside the cold starts
	bareErr     error
	jupyter     *jupyter
	jupyterErr  error
	jupyterMem  uint64
	jupyterDesc []string
	peers       []*peerResult
	pyClient    []*pyClientResult // repl-mcp and mcp-python-interpreter through the Python client
}

func (b *bench) runPeers(ctx context.Context) *peersMeasurements {
	pm := &peersMeasurements{}
	pc := b.cfg.Peers
	b.say("peers: a Jupyter server for jupyter-mcp-server")
	if _, err := os.Stat(filepath.Join(pc.Venvs, ".venv-peers-jupyter", "bin", "jupyter")); err != nil {
		pm.jupyterErr = fmt.Errorf("not installed (%v): run make peers-deps", err)
	} else {
		pm.jupyter, pm.jupyterErr = startJupyter(ctx, filepath.Join(pc.Venvs, ".venv-peers-jupyter"), b.dir)
	}
	if pm.jupyter != nil {
		defer func() {
			pm.jupyter.dropKernels(context.WithoutCancel(ctx))
			if _, err := pm.jupyter.c.stop(); err != nil {
				b.notes.add("jupyter lab: " + err.Error())
			}
			pm.jupyter.c.signalGroup(syscall.SIGKILL)
		}()
	}
	specs := peerSpecs(b.cfg, b.dir, pm.jupyter, pm.jupyterErr)
	for _, s := range specs {
		pm.peers = append(pm.peers, &peerResult{spec: s})
	}

	b.say("peers: %d cold starts of each server, interleaved with bare Python starts", pc.PeerColdRun)
	if s, err := startPeer(ctx, b.dir, specs[0]); err == nil { // untimed: it fills repl-mcp's code cache
		peerCell(ctx, s, specs[0], trivialCode, "2")
		b.stopPeer(s, &peerResult{spec: specs[0]}, nil)
	}
	for i := 0; i < pc.PeerColdRun; i++ {
		took, err := runOnce(ctx, b.dir, startTimeout, nil, b.cfg.Python, "-c", "pass")
		if pm.bareErr == nil {
			pm.bare, pm.bareErr = append(pm.bare, took), err
		}
		for _, r := range pm.peers {
			if r.spec.variantOf != "" || r.coldErr != nil {
				continue
			}
			start := time.Now()
			s, err := startPeer(ctx, b.dir, r.spec)
			if err == nil {
				_, err = peerCell(ctx, s, r.spec, trivialCode, "2")
				took := time.Since(start)
				b.stopPeer(s, r, pm.jupyter)
				if err == nil {
					r.cold = append(r.cold, took)
				}
			}
			r.coldErr = err
		}
	}

	b.say("peers: the bare pipe floor, then %d rounds of %d cells on each server", pc.Rounds, pc.RoundCells)
	pm.floor, pm.floorErr = b.measureFloor(ctx)
	servers := map[string]*mcpServer{}
	for _, r := range pm.peers {
		if r.spec.variantOf != "" {
			continue
		}
		s, err := startPeer(ctx, b.dir, r.spec)
		if err != nil {
			r.warmErr = err
			continue
		}
		servers[r.spec.name] = s
		if err := sleep(ctx, idleWait); err != nil {
			r.warmErr = err
			continue
		}
		r.idle, _, r.memErr = treeRSS(s.pid())
		// One warm-up cell: a peer may start its interpreter or kernel on the first.
		if _, err := peerCell(ctx, s, r.spec, trivialCode, "2"); err != nil {
			r.warmErr = fmt.Errorf("warm-up cell: %w", err)
		}
		r.cells = 1
	}
	for _, r := range pm.peers {
		if r.spec.variantOf != "" {
			for _, o := range pm.peers {
				if o.spec.name == r.spec.variantOf {
					r.warmErr = o.warmErr
				}
			}
		}
	}
	for round := 0; round < pc.Rounds && ctx.Err() == nil; round++ {
		// A rotating order: no server always runs right after the same one.
		for k := range pm.peers {
			r := pm.peers[(round+k)%len(pm.peers)]
			name := r.spec.name
			n := pc.RoundCells
			if r.spec.variantOf != "" {
				name, n = r.spec.variantOf, pc.SlowCells
			}
			s := servers[name]
			if s == nil || r.warmErr != nil {
				continue
			}
			for i := 0; i < n; i++ {
				took, err := peerCell(ctx, s, r.spec, trivialCode, "2")
				if err != nil {
					r.warmErr = fmt.Errorf("round %d: %w", round+1, err)
					break
				}
				r.warm = append(r.warm, took)
			}
		}
	}
	if pm.jupyter != nil {
		pm.jupyterMem, pm.jupyterDesc, _ = treeRSS(pm.jupyter.c.pid())
	}
	b.say("peers: %d rounds of %d cells on repl-mcp and mcp-python-interpreter through a Python client", pc.Rounds, pc.RoundCells)
	pm.pyClient = b.measurePyClient(ctx, specs[:2])
	for _, r := range pm.peers {
		s := servers[r.spec.name]
		if s == nil {
			continue
		}
		r.cells += len(r.warm)
		for _, o := range pm.peers {
			if o.spec.variantOf == r.spec.name {
				r.cells += len(o.warm)
			}
		}
		var err error
		if r.after, r.tree, err = treeRSS(s.pid()); err != nil && r.memErr == nil {
			r.memErr = err
		}
		b.stopPeer(s, r, pm.jupyter)
	}
	return pm
}

// stopPeer stops a peer's process and whatever it left: its process group, and for
// jupyter-mcp-server the kernels it started in the Jupyter server.
func (b *bench) stopPeer(s *mcpServer, r *peerResult, j *jupyter) {
	procs, procErr := descendants(s.pid())
	rep, err := s.stop()
	if err != nil {
		b.notes.add(r.spec.name + ": " + err.Error())
	}
	if rep.onEOF {
		r.stopReport = fmt.Sprintf("ended %v after stdin EOF", rep.took.Round(time.Millisecond))
	} else {
		r.stopReport = fmt.Sprintf("did not exit within %v of stdin EOF; stopped by %s", eofGrace, rep.signal)
	}
	if procErr == nil {
		b.reapLeaks(r.spec.name, procs)
	}
	s.signalGroup(syscall.SIGKILL)
	if j != nil && strings.HasPrefix(r.spec.name, "jupyter-mcp-server") {
		j.dropKernels(context.Background())
	}
}

// peersReport is the markdown table of the peers run, for the README.
func peersReport(cfg config, env environment, pm *peersMeasurements, notes []string) string {
	var sb strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&sb, "Measured %s on %s (%s, %s), Python %s, by `make bench-peers`: one lean synchronous\n",
		env.start.UTC().Format("2006-01-02 15:04 MST"), cpuModel(), env.host, host, env.pythonVersion)
	fmt.Fprintf(&sb, "stdio client in Go for every server, the cell `%s`, %d interleaved rounds of %d cells each\n", trivialCode, cfg.Peers.Rounds, cfg.Peers.RoundCells)
	fmt.Fprintf(&sb, "(%d a round at jupyter-mcp-server's default interval), load %s at start and %s at end.\n\n", cfg.Peers.SlowCells, env.loadStart, env.loadEnd)
	sb.WriteString("| server | warm p50 | warm p90 | p50 vs floor | p50 vs repl-mcp | cold start, median | idle RSS (tree) | RSS after cells (tree) |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|\n")
	floor := time.Duration(0)
	if pm.floorErr == nil {
		floor = median(pm.floor)
		fmt.Fprintf(&sb, "| floor: bare pipe to a Python exec loop | %s | %s | 1x | | %s (`python -c pass`) | | |\n",
			fmtDur(floor), fmtDur(percentile(pm.floor, 90)), durOr(pm.bare, pm.bareErr))
	} else {
		fmt.Fprintf(&sb, "| floor | not measured: %v | | | | | | |\n", pm.floorErr)
	}
	var ours time.Duration
	if r := pm.peers[0]; r.warmErr == nil && len(r.warm) > 0 {
		ours = median(r.warm)
	}
	for _, r := range pm.peers {
		if r.warmErr != nil && len(r.warm) == 0 {
			fmt.Fprintf(&sb, "| %s | could not run: %s | | | | | | |\n", r.spec.name, oneLine(r.warmErr))
			continue
		}
		p50 := median(r.warm)
		vsFloor, vsOurs := "", ""
		if floor > 0 {
			vsFloor = fmtRatio(durRatio(p50, floor))
		}
		if ours > 0 {
			vsOurs = fmtRatio(durRatio(p50, ours))
		}
		cold, idle, after := "(its process's)", "", ""
		if r.spec.variantOf == "" {
			cold = durOr(r.cold, r.coldErr)
			if r.memErr == nil {
				idle, after = mib(r.idle), fmt.Sprintf("%s after %d", mib(r.after), r.cells)
			}
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.spec.name, fmtDur(p50),
			fmtDur(percentile(r.warm, 90)), vsFloor, vsOurs, cold, idle, after)
	}
	sb.WriteString("\n")
	var fastest *peerResult
	for _, r := range pm.peers[1:] {
		if len(r.warm) > 0 && (fastest == nil || median(r.warm) < median(fastest.warm)) {
			fastest = r
		}
	}
	if fastest != nil && ours > 0 {
		ratio := durRatio(median(fastest.warm), ours)
		fmt.Fprintf(&sb, "- The fastest peer, %s, takes %s a warm cell: %s repl-mcp's %s (target: at least 5x; %s).\n",
			fastest.spec.name, fmtDur(median(fastest.warm)), fmtRatio(ratio), fmtDur(ours), metText(ratio >= 5))
	}
	if pm.jupyter != nil {
		fmt.Fprintf(&sb, "- jupyter-mcp-server's Jupyter server (`jupyter lab` on 127.0.0.1, started and stopped by the bench) took %s to answer, and its tree (the server and its kernel) held %s after the cells, not counted above.\n",
			fmtDur(pm.jupyter.started), mib(pm.jupyterMem))
	} else if pm.jupyterErr != nil {
		fmt.Fprintf(&sb, "- jupyter-mcp-server could not run: its Jupyter server: %s.\n", oneLine(pm.jupyterErr))
	}
	for _, r := range pm.peers {
		if r.spec.variantOf != "" {
			continue
		}
		if r.coldErr != nil {
			fmt.Fprintf(&sb, "- %s: cold start not measured: %s\n", r.spec.name, oneLine(r.coldErr))
		} else {
			fmt.Fprintf(&sb, "- %s: cold starts %s; process tree after the cells: %s; %s.\n", r.spec.name, list(r.cold), strings.Join(r.tree, ", "), r.stopReport)
		}
		if r.warmErr != nil && len(r.warm) > 0 {
			fmt.Fprintf(&sb, "- %s stopped early: %s\n", r.spec.name, oneLine(r.warmErr))
		}
	}
	if len(pm.pyClient) > 0 {
		sb.WriteString(pyClientReport(cfg, pm.pyClient))
	}
	for _, n := range notes {
		fmt.Fprintf(&sb, "- %s\n", n)
	}
	return sb.String()
}

func metText(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

func durOr(samples []time.Duration, err error) string {
	if len(samples) == 0 {
		if err != nil {
			return "not measured: " + oneLine(err)
		}
		return "not measured"
	}
	return fmtDur(median(samples))
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// cpuModel is the machine's CPU, from /proc/cpuinfo where there is one.
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
