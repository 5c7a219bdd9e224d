package interop

// What the agent's model reads. The rest of the suite checks the wire; this test runs
// the real Claude Code CLI and the real Codex CLI, non-interactively, against fake
// model APIs of our own (fakeanthropic_test.go, fakeresponses_test.go) and records,
// for each tool call of a fixed script (modelview_cases_test.go), exactly what the CLI
// gives its model: text, images, error flag, sizes. Each rule of what the model must
// read is its own subtest, per agent; the same calls then go through the Python and
// TypeScript SDK clients, which read the result as it is, to check that the
// structured form keeps every field.
//
// Each CLI runs offline and alone: HOME (and CODEX_HOME) in a scratch directory, its
// own environment made from nothing, inside a network namespace whose only interface
// is loopback (netns_linux_test.go), where the fake API listens. Without a namespace
// the agents are not run: the test says so, and fails in CI.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/pythons"
	"github.com/iota-uz/repl-mcp/internal/testproc"
	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// The agent CLIs, pinned in package.json.
const (
	claudeCodePackage = "@anthropic-ai/claude-code"
	codexPackage      = "@openai/codex"
)

// Bounds. A run is about ten tool calls of a few seconds each (matplotlib and pandas
// import in the first cells that use them, with a cold font cache).
const (
	agentRunBound     = 4 * time.Minute
	agentLeftoverWait = 10 * time.Second
	sdkCasesBound     = 3 * time.Minute
)

// modelViewPrompt is the prompt each CLI is given; the fakes recognise the scripted
// conversation by it.
const modelViewPrompt = "repl-mcp model-view script: make the tool calls the script makes."

var (
	claudeCode           = agentKind{name: "ClaudeCode", errorFlag: true}
	claudeCodeBackground = agentKind{name: "ClaudeCodeBackground", errorFlag: true}
	codex                = agentKind{name: "Codex"}
)

func TestModelView(t *testing.T) {
	s := newSuite(t)
	python := pythons.DataVenv(t)
	steps := modelViewSteps()
	agents := []struct {
		kind agentKind
		run  func(t *testing.T, s *suite, python string, steps []step) *agentRun
	}{{claudeCode, runClaudeCode}, {codex, runCodex}, {gemini, runGemini}, {opencode, runOpencode}}
	for _, a := range agents {
		t.Run(a.kind.name, func(t *testing.T) {
			t.Parallel()
			run := a.run(t, s, python, steps)
			t.Run("Harness", func(t *testing.T) { run.checkHarness(t, steps) })
			t.Run("HarnessImagePath", func(t *testing.T) { reportCheck(t, func(c *checker) { checkTinyImage(c, a.kind, run.recs) }) })
			for _, p := range append(modelViewPoints(), roundTwoPoints()...) {
				t.Run(p.name, func(t *testing.T) { reportCheck(t, func(c *checker) { p.check(c, a.kind, run.recs) }) })
			}
		})
	}
	// Claude Code with background tasks on, on a script of its own: the long cell's
	// calls go to the background, and what the model finally reads is what their
	// task notifications deliver.
	t.Run(claudeCodeBackground.name, func(t *testing.T) {
		t.Parallel()
		bgSteps := backgroundSteps()
		run := s.runClaudeCodeWith(t, bgSteps, claudeCodeBackground, s.modelViewServers(python), backgroundEnv...)
		t.Run("Harness", func(t *testing.T) { run.checkHarness(t, bgSteps) })
		p := backgroundPoint()
		t.Run(p.name, func(t *testing.T) { reportCheck(t, func(c *checker) { p.check(c, claudeCode, run.recs) }) })
	})
	// Claude Code on a script of its own: a timeout beside a Dask cluster and a Popen of
	// earlier cells (modelview_scope_test.go).
	t.Run(claudeCodeScope.name, func(t *testing.T) {
		t.Parallel()
		s.testInterruptScope(t, python)
	})
	sdks := []struct{ name, interpreter, script string }{
		{"PythonSDK", s.venvPython, s.path("clients", "py_client.py")},
		{"TypeScriptSDK", s.node, s.path("clients", "ts_client.mjs")},
	}
	for _, c := range sdks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			results := s.runSDKCases(t, c.interpreter, c.script, python, steps)
			for _, sc := range structuredChecks() {
				t.Run("StructuredFormKeepsEveryField/"+sc.step, func(t *testing.T) {
					r, ok := results[sc.step]
					if !ok {
						t.Fatalf("the client printed no result for step %s", sc.step)
					}
					if r.Error != "" {
						t.Fatalf("the call raised in the client:\n%s", r.Error)
					}
					reportCheck(t, func(c *checker) { sc.check(c, r) })
				})
			}
		})
	}
}

// agentRun is one CLI's run through the script, and what its fake model recorded.
type agentRun struct {
	kind      agentKind
	recs      records
	exitErr   error
	netns     string // the CLI's network namespace
	ownNetns  string // this test process's
	stdout    *testproc.Tail
	stderr    *testproc.Tail
	leftovers []int // processes of the run still alive after the CLI exited
	elapsed   time.Duration
}

// agentSetup is what an agent's runner gives runAgent.
type agentSetup struct {
	kind    agentKind
	handler func(*fakeModel) http.Handler
	// command makes the CLI's command for a fake API on 127.0.0.1:port; scratch is
	// the run's private directory, marker the value of INTEROP_MARKER in the MCP
	// servers' environment.
	command func(ctx context.Context, port int, scratch, marker string) (*exec.Cmd, error)
	// then, when set, are commands run after the first has exited, one after the other,
	// with the same scratch directory and fake model (a CLI that continues its
	// conversation in a new process: `claude --continue`).
	then []func(ctx context.Context, port int, scratch, marker string) (*exec.Cmd, error)
	// later is the prompt of the conversation's second turn, which a then command
	// sends (fakeModel.later).
	later string
	// watch are strings the fake counts in the requests' bodies (records.watched).
	watch []string
}

// runAgent runs one CLI through the script inside its own network namespace, bounded
// in time, and kills its process group at the end.
func runAgent(t *testing.T, setup agentSetup, steps []step) *agentRun {
	t.Helper()
	scratch := t.TempDir()
	marker := markerFor(t)
	fake := newFakeModel(setup.kind.name, modelViewPrompt, steps)
	fake.later = setup.later
	fake.watch = setup.watch
	run := &agentRun{kind: setup.kind, stdout: newTail(256 << 10), stderr: newTail(256 << 10)}

	ctx, cancel := context.WithTimeout(t.Context(), testwait.Bound(t, agentRunBound*time.Duration(1+len(setup.then))))
	defer cancel()
	start := time.Now()
	var leftovers []int
	for i, command := range append([]func(context.Context, int, string, string) (*exec.Cmd, error){setup.command}, setup.then...) {
		if i > 0 && run.exitErr != nil {
			break // the conversation to continue went wrong already
		}
		run.exitErr = runOneAgent(t, ctx, setup, command, fake, run, scratch, marker)
		for _, pid := range run.leftovers {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		leftovers = append(leftovers, run.leftovers...)
	}
	run.elapsed, run.leftovers = time.Since(start), leftovers
	run.recs = fake.records()
	t.Logf("%s ran the script in %v (exit: %v)", setup.kind.name, run.elapsed.Round(time.Millisecond), run.exitErr)
	for _, id := range run.recs.order {
		t.Logf("the model was given, for %s", run.recs.given[id].summary())
	}
	if len(run.recs.handled) > 0 {
		t.Logf("other requests the fake answered: %q", run.recs.handled)
	}
	if dir := os.Getenv(modelViewDumpEnv); dir != "" {
		path := filepath.Join(dir, setup.kind.name+".json")
		if err := writeJSONFile(path, run.recs.dump()); err != nil {
			t.Errorf("%s: %v", modelViewDumpEnv, err)
		} else {
			t.Logf("wrote what the model was given to %s", path)
		}
	}
	return run
}

// runOneAgent runs one of a setup's commands to its end in a network namespace of its
// own, the fake serving it there, and returns how it exited; run.leftovers are the
// processes of it still alive soon after.
func runOneAgent(t *testing.T, ctx context.Context, setup agentSetup, command func(context.Context, int, string, string) (*exec.Cmd, error), fake *fakeModel, run *agentRun, scratch, marker string) (exitErr error) {
	var cmd *exec.Cmd
	ls, err := startIsolated(1, func(ls []net.Listener) error {
		var err error
		cmd, err = command(ctx, ls[0].Addr().(*net.TCPAddr).Port, scratch, marker)
		if err != nil {
			return err
		}
		inGroup(cmd)
		cmd.Cancel = func() error { return killGroup(cmd) }
		cmd.WaitDelay = 5 * time.Second
		cmd.Stdout, cmd.Stderr = run.stdout, run.stderr
		return cmd.Start()
	})
	skipOrFailNetns(t, err)
	if err != nil {
		t.Fatalf("starting %s: %v", setup.kind.name, err)
	}
	srv := &http.Server{Handler: setup.handler(fake), ReadHeaderTimeout: 10 * time.Second}
	var serving sync.WaitGroup
	serving.Go(func() { srv.Serve(ls[0]) })
	defer func() {
		srv.Close()
		serving.Wait()
	}()

	started := time.Now()
	var nsErr error
	run.ownNetns, _ = netnsOf(0)
	if run.netns, nsErr = netnsOf(cmd.Process.Pid); nsErr != nil {
		run.netns = "unknown: " + nsErr.Error() // it exited at once, or /proc is not Linux's
	}
	exitErr = cmd.Wait()
	if ctx.Err() != nil {
		exitErr = errors.Join(exitErr, fmt.Errorf("killed after %v: %w", time.Since(started).Round(time.Second), context.Cause(ctx)))
	}
	killGroup(cmd)

	// The MCP servers may sit in process groups of their own; everything the run
	// started carries the marker, and must be gone soon after the CLI.
	limit := time.Now().Add(testwait.Bound(t, agentLeftoverWait))
	for run.leftovers = markedProcesses(marker); len(run.leftovers) > 0 && time.Now().Before(limit); run.leftovers = markedProcesses(marker) {
		select {
		case <-t.Context().Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return exitErr
}

// skipOrFailNetns says why an agent could not be isolated when err is errNoNetns:
// outside CI the test skips, in CI it fails. Any other err is the caller's.
func skipOrFailNetns(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, errNoNetns) {
		return
	}
	msg := fmt.Sprintf("%v. The agent CLIs run only inside a network namespace whose only interface is loopback, so that nothing of theirs reaches the network; this needs CAP_SYS_ADMIN (root)", err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + ", which CI must provide")
	}
	t.Skip(msg + ": outside CI the agents are skipped, never run with network access")
}

// modelViewDumpEnv names a directory into which the test writes, per agent, every
// record as JSON (AGENT.json): what the model read, whole, for whoever changes it.
const modelViewDumpEnv = "REPL_MCP_MODELVIEW_DUMP"

// checkHarness fails when the run itself went wrong, whatever the server presents:
// the CLI must exit 0 in its own network namespace, send only requests the fake knows,
// deliver every scripted call, and leave no process behind.
func (r *agentRun) checkHarness(t *testing.T, steps []step) {
	if r.exitErr != nil {
		t.Errorf("%s did not exit 0: %v\nstdout (tail):\n%s\nstderr (tail):\n%s", r.kind.name, r.exitErr, clip(r.stdout.String(), 4000), clip(r.stderr.String(), 4000))
	}
	if r.netns == r.ownNetns || strings.HasPrefix(r.netns, "unknown") {
		t.Errorf("%s ran in network namespace %q, this test in %q: its isolation is not shown", r.kind.name, r.netns, r.ownNetns)
	}
	for _, u := range r.recs.unexpected {
		t.Errorf("unexpected request to the fake API: %s", u)
	}
	for _, p := range r.recs.problems {
		t.Errorf("the scripted conversation went wrong: %s", p)
	}
	if missing := r.recs.missing(steps); len(missing) > 0 {
		t.Errorf("steps %v were never called or their results never came back (%d scripted requests served)", missing, r.recs.requests)
	}
	for _, st := range steps {
		if g, ok := r.recs.given[st.id]; ok && g.Skipped != "" && st.derive == nil {
			t.Errorf("step %s was skipped, though it depends on nothing: %s", st.id, g.Skipped)
		}
	}
	if !r.recs.finished {
		t.Errorf("the fake never sent its final answer: the conversation ended early")
	}
	if len(r.leftovers) > 0 {
		t.Errorf("processes %v of the run were still alive %v after %s exited (killed now)", r.leftovers, agentLeftoverWait, r.kind.name)
	}
}

// checkTinyImage checks what the model was given for server-everything's
// get-tiny-image: text, a 20×20 PNG, text. It does not depend on repl-mcp at all, so it
// shows that the fake reads images as each CLI passes them on.
func checkTinyImage(c *checker, a agentKind, r records) {
	g := stepGiven(c, r, "tiny_image")
	want := []string{"Here's the image you requested:", "The image above is the MCP logo."}
	if got := a.blocks(g); strings.Join(got, "|") != strings.Join(want, "|") {
		c.errorf("texts = %q, want %q", got, want)
	}
	if len(g.Images) != 1 || g.Images[0].Format != "png" || g.Images[0].Width != 20 || g.Images[0].Height != 20 || g.Images[0].MediaType != "image/png" {
		c.errorf("images = %+v, want one 20×20 image/png", g.Images)
	}
}

// statSize says what os.Stat found, for a failure message.
func statSize(fi os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d bytes", fi.Size())
}

// agentEnv is a CLI's whole environment, made from nothing so that no variable of the
// user's (API keys, a parent agent's settings, proxies) reaches it: PATH, the scratch
// HOME, and the extras.
func agentEnv(home string, extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"LANG=C.UTF-8",
		"TERM=dumb",
	}, extra...)
}

// runClaudeCode runs Claude Code in print mode (`-p`) against the fake Messages API,
// with the model-view servers.
func runClaudeCode(t *testing.T, s *suite, python string, steps []step) *agentRun {
	return s.runClaudeCodeWith(t, steps, claudeCode, s.modelViewServers(python))
}

// modelViewServers makes the model-view servers for each run, on python.
func (s *suite) modelViewServers(python string) func(marker, project string) (map[string]agentServer, error) {
	return func(marker, _ string) (map[string]agentServer, error) { return s.agentServers(python, marker), nil }
}

// claudeCode is the pinned Claude Code CLI's native binary.
func (s *suite) claudeCode(t *testing.T) string {
	t.Helper()
	s.checkNpmPackage(t, claudeCodePackage)
	claude := s.path("node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	// bin/claude.exe is a 500-byte placeholder until the package's postinstall copies
	// the platform's native binary (hundreds of MB) over it; allowScripts in
	// package.json lets npm run it. Nothing of the CLI runs outside its namespace, so
	// this looks at the file instead of asking it for its version.
	if fi, err := os.Stat(claude); err != nil || fi.Size() < 1<<20 {
		t.Fatalf("%s is not Claude Code's native binary (%v): %s (npm ci must run the package's postinstall, which allowScripts in interop/package.json approves)", claude, statSize(fi, err), setupStep)
	}
	return claude
}

// claudeOpts are what some runs of Claude Code add.
type claudeOpts struct {
	env []string // more variables in its environment
	// projectMCP lets Claude Code read the project's .mcp.json too, its servers
	// approved as a user who trusts the project would (enableAllProjectMcpServers),
	// instead of --strict-mcp-config.
	projectMCP bool
	watch      []string // strings the fake counts in the requests (agentSetup.watch)
	// handler makes the fake API (nil: the plain one); allow are more tools allowed
	// than the steps call (Agent, to start sub-agents).
	handler func(*fakeModel) http.Handler
	allow   []string
	// later, when set, is the prompt of a second run that continues the conversation
	// in a new process (`claude --continue`).
	later string
}

// runClaudeCodeWith runs Claude Code through steps as kind (which names its records),
// with the MCP servers that servers makes for the run's marker and project directory
// (Claude Code's working directory, and the root it offers MCP servers), made before
// Claude Code starts, and with more variables in its environment.
func (s *suite) runClaudeCodeWith(t *testing.T, steps []step, kind agentKind, servers func(marker, project string) (map[string]agentServer, error), env ...string) *agentRun {
	return s.runClaudeCodeOpts(t, steps, kind, servers, claudeOpts{env: env})
}

// runClaudeCodeAPI is runClaudeCodeWith against the fake API handler makes, with more
// tools allowed than the steps call (Agent, to start sub-agents).
func (s *suite) runClaudeCodeAPI(t *testing.T, steps []step, kind agentKind, servers func(marker, project string) (map[string]agentServer, error),
	handler func(*fakeModel) http.Handler, allow []string, env ...string) *agentRun {
	return s.runClaudeCodeOpts(t, steps, kind, servers, claudeOpts{env: env, handler: handler, allow: allow})
}

// runClaudeCodeOpts is runClaudeCodeWith with opts.
func (s *suite) runClaudeCodeOpts(t *testing.T, steps []step, kind agentKind, servers func(marker, project string) (map[string]agentServer, error), opts claudeOpts) *agentRun {
	return runAgent(t, s.claudeSetup(t, steps, kind, servers, opts), steps)
}

// claudeSetup is Claude Code's setup for runAgent: the first run with the model-view
// prompt, and, with opts.later, a second that continues the conversation.
func (s *suite) claudeSetup(t *testing.T, steps []step, kind agentKind, servers func(marker, project string) (map[string]agentServer, error), opts claudeOpts) agentSetup {
	t.Helper()
	handler := opts.handler
	if handler == nil {
		handler = func(m *fakeModel) http.Handler { return anthropicAPI{m} }
	}
	claude := s.claudeCode(t)
	allowed := append([]string(nil), opts.allow...)
	for _, st := range steps {
		if name := claudeToolName(st.server, st.tool); !slices.Contains(allowed, name) {
			allowed = append(allowed, name)
		}
	}
	setup := agentSetup{
		kind:    kind,
		handler: handler,
		command: claudeCommand(claude, allowed, servers, modelViewPrompt, opts),
		watch:   opts.watch,
	}
	if opts.later != "" {
		setup.later = opts.later
		setup.then = append(setup.then, claudeCommand(claude, allowed, servers, opts.later, opts, "--continue"))
	}
	return setup
}

// claudeCommand makes Claude Code's command in print mode: prompt, the MCP servers
// servers makes, the allowed tools, opts' environment and project servers, and args
// before the prompt (--continue).
func claudeCommand(claude string, allowed []string, servers func(marker, project string) (map[string]agentServer, error), prompt string, opts claudeOpts, args ...string) func(context.Context, int, string, string) (*exec.Cmd, error) {
	return func(ctx context.Context, port int, scratch, marker string) (*exec.Cmd, error) {
		home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
		if err := mkdirs(home, project); err != nil {
			return nil, err
		}
		config := filepath.Join(scratch, "claude-mcp.json")
		made, err := servers(marker, project)
		if err != nil {
			return nil, err
		}
		configured := map[string]any{}
		for name, srv := range made {
			configured[name] = map[string]any{"type": "stdio", "command": srv.command, "args": srv.args, "env": srv.env}
		}
		if err := writeJSONFile(config, map[string]any{"mcpServers": configured}); err != nil {
			return nil, err
		}
		args = append(args, "-p", prompt, "--mcp-config", config, "--strict-mcp-config",
			"--allowedTools", strings.Join(allowed, ","), "--output-format", "stream-json", "--verbose")
		if opts.projectMCP {
			args = slices.DeleteFunc(args, func(a string) bool { return a == "--strict-mcp-config" })
			if err := mkdirs(filepath.Join(home, ".claude")); err != nil {
				return nil, err
			}
			if err := writeJSONFile(filepath.Join(home, ".claude", "settings.json"), map[string]any{"enableAllProjectMcpServers": true}); err != nil {
				return nil, err
			}
		}
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Dir = project
		cmd.Env = agentEnv(home,
			"ANTHROPIC_BASE_URL=http://127.0.0.1:"+strconv.Itoa(port),
			"ANTHROPIC_API_KEY=dummy",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		)
		cmd.Env = append(cmd.Env, opts.env...)
		return cmd, nil
	}
}

// runCodex runs `codex exec` against the fake Responses API, with approvals and the
// sandbox bypassed (the cells must run; the network namespace is the isolation).
//
// The model is gpt-5.5 in direct function-call mode: every MCP tool is a function the
// model calls and whose output it reads. Codex's code mode, where the model writes
// JavaScript that calls the tools and reads only what the script prints, would test
// the fake's script instead of what Codex gives a model from a tool result, so
// features.code_mode is off. gpt-5.5 keeps Codex's real tool_search deferral (and its
// real truncation policy), which a made-up model name would not.
func runCodex(t *testing.T, s *suite, python string, steps []step) *agentRun {
	return runCodexMode(t, s, python, steps, false, func(m *fakeModel) http.Handler { return responsesAPI{m} })
}

// runCodexMode is runCodex with code mode on or off, against the fake API handler makes.
func runCodexMode(t *testing.T, s *suite, python string, steps []step, codeMode bool, handler func(*fakeModel) http.Handler) *agentRun {
	s.checkNpmPackage(t, codexPackage)
	codexJS := s.path("node_modules", "@openai", "codex", "bin", "codex.js")
	// codex.js runs the native binary of the platform package npm ci picked from the
	// optional dependencies (@openai/codex-linux-x64 here, an alias of
	// @openai/codex@0.171.0-linux-x64).
	native, _ := filepath.Glob(s.path("node_modules", "@openai", "codex-*", "package.json"))
	found := false
	for _, p := range native {
		var pkg struct {
			Version string `json:"version"`
		}
		readJSON(t, p, &pkg)
		found = found || strings.HasPrefix(pkg.Version, "0.171.0-")
	}
	if !found {
		t.Fatalf("no platform package of Codex 0.171.0 in interop/node_modules/@openai (found %q): %s (npm ci installs it from the lockfile's optional dependencies)", native, setupStep)
	}
	return runAgent(t, agentSetup{
		kind:    codex,
		handler: handler,
		command: func(ctx context.Context, port int, scratch, marker string) (*exec.Cmd, error) {
			home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
			codexHome := filepath.Join(home, ".codex")
			if err := mkdirs(home, project, codexHome); err != nil {
				return nil, err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "model = %s\nmodel_provider = \"modelview\"\n", tomlString("gpt-5.5"))
			b.WriteString("approval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n")
			fmt.Fprintf(&b, "\n[features]\ncode_mode = %v\ncode_mode_only = false\n", codeMode)
			fmt.Fprintf(&b, "\n[model_providers.modelview]\nname = \"repl-mcp model-view fake\"\nbase_url = %s\n", tomlString(fmt.Sprintf("http://127.0.0.1:%d/v1", port)))
			b.WriteString("wire_api = \"responses\"\nenv_key = \"REPL_MCP_MODELVIEW_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n")
			for name, srv := range s.agentServers(python, marker) {
				fmt.Fprintf(&b, "\n[mcp_servers.%s]\ncommand = %s\nargs = [", name, tomlString(srv.command))
				for i, a := range srv.args {
					if i > 0 {
						b.WriteString(", ")
					}
					b.WriteString(tomlString(a))
				}
				b.WriteString("]\nstartup_timeout_sec = 60\n")
				if name == "longrepl" {
					fmt.Fprintf(&b, "tool_timeout_sec = %d\n", longToolTimeout)
				}
				fmt.Fprintf(&b, "[mcp_servers.%s.env]\nINTEROP_MARKER = %s\n", name, tomlString(srv.env["INTEROP_MARKER"]))
			}
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(b.String()), 0o600); err != nil {
				return nil, err
			}
			cmd := exec.CommandContext(ctx, s.node, codexJS, "exec", "--json", "--skip-git-repo-check",
				"--dangerously-bypass-approvals-and-sandbox", "-C", project, modelViewPrompt)
			cmd.Dir = project
			cmd.Env = agentEnv(home, "CODEX_HOME="+codexHome, "REPL_MCP_MODELVIEW_KEY=dummy")
			return cmd, nil
		},
	}, steps)
}

// agentServer is an MCP server in an agent's configuration.
type agentServer struct {
	command string
	args    []string
	env     map[string]string
}

// agentServers are the MCP servers both agents get: repl-mcp on the data-work venv's
// interpreter, the same with the long cell's --yield-after (longYieldAfter) and a
// task threshold under it (longTaskAfter: a client that declared the tasks extension,
// which neither does here, would get a task instead of the yield), and
// server-everything for the image control step.
func (s *suite) agentServers(python, marker string) map[string]agentServer {
	env := map[string]string{"INTEROP_MARKER": marker}
	return map[string]agentServer{
		"repl": {command: s.replMCP, args: []string{"--python", python}, env: env},
		"longrepl": {command: s.replMCP, args: []string{"--python", python, "--yield-after", strconv.Itoa(longYieldAfter),
			"--task-after", strconv.Itoa(longTaskAfter)}, env: env},
		"everything": {command: s.node, args: []string{s.everythingEntry(), "stdio"}, env: env},
	}
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
