package interop

import (
	"regexp"
	"strings"
	"testing"
)

// An interrupt stops the cell, not the session (issue 31, point 2; docs/contract.md
// §5.6), as Claude Code's model reads it: a session with a Dask LocalCluster and a Popen
// made by earlier cells times out a third cell that started a process of its own. The
// timeout's text says the variables survived and names the process it ended, and no
// other; the cluster's workers and the earlier Popen run on (the next cell counts two
// workers, finds the Popen running and computes on the cluster); and no dying worker's
// traceback lands in a later cell. Before, the SIGINT to the worker's whole group killed
// them all while the text said "variables preserved", and their KeyboardInterrupt
// tracebacks came with later cells under [ok].

var claudeCodeScope = agentKind{name: "ClaudeCodeInterruptScope", errorFlag: true}

// The cells of the script. The cluster's start may take a while on a busy machine: its
// call never yields (yield_after 0) and has a long timeout.
const (
	cellScopeCluster = `import subprocess
from dask.distributed import Client, LocalCluster
cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
client = Client(cluster)
server = subprocess.Popen(["sleep", "600"])
print("workers", len(client.scheduler_info()["workers"]))
`
	cellScopeTimeout = `import subprocess, time
mine = subprocess.Popen(["sleep", "600"])
while True:
    time.sleep(0.05)
`
	cellScopeAfter = `print("after", len(client.scheduler_info()["workers"]), server.poll(), mine.poll(), client.submit(lambda x: x + 1, 41).result(timeout=30))`
	cellScopeLater = `print("later")`
	cellScopeClose = `client.close(); cluster.close(); server.kill(); print("closed")`
)

// scopeSteps is the script of the interrupt-scope run, on repl-mcp's default session.
func scopeSteps() []step {
	exec := func(id, code string, timeout, yieldAfter float64) step {
		return step{id: id, server: "repl", tool: "execute_python",
			args: map[string]any{"code": code, "timeout": timeout, "yield_after": yieldAfter}}
	}
	return []step{
		exec("scope_cluster", cellScopeCluster, 180, 0),
		exec("scope_timeout", cellScopeTimeout, 1, 0),
		exec("scope_after", cellScopeAfter, cellTimeout, 0),
		exec("scope_later", cellScopeLater, cellTimeout, 0),
		exec("scope_close", cellScopeClose, cellTimeout, 0),
	}
}

// testInterruptScope runs Claude Code through scopeSteps with repl-mcp on the data
// venv's interpreter (Dask is there) and checks what its model read.
func (s *suite) testInterruptScope(t *testing.T, python string) {
	steps := scopeSteps()
	servers := func(marker, _ string) (map[string]agentServer, error) {
		return map[string]agentServer{"repl": s.agentServers(python, marker)["repl"]}, nil
	}
	run := s.runClaudeCodeWith(t, steps, claudeCodeScope, servers)
	t.Run("Harness", func(t *testing.T) { run.checkHarness(t, steps) })
	p := scopePoint()
	t.Run(p.name, func(t *testing.T) { reportCheck(t, func(c *checker) { p.check(c, claudeCode, run.recs) }) })
}

var (
	scopeEnded = regexp.MustCompile(`timed out after 1 s; variables preserved; the interrupt ended the cell's processes sleep \(pid \d+, SIGINT\)[;\n]`)
	scopeAfter = regexp.MustCompile(`(?m)^after 2 None -2 42$`)
	// What a Dask worker killed by an interrupt prints as it dies.
	scopeDying = regexp.MustCompile(`KeyboardInterrupt|Traceback|Nanny|Dask Worker process`)
)

// scopePoint: the timeout names the process it ended and says the variables survived;
// the processes of earlier cells ran on, and none of their dying words reach the model.
func scopePoint() point {
	return point{"InterruptStopsTheCellNotTheSession", []string{"scope_cluster", "scope_timeout", "scope_after", "scope_later"}, func(c *checker, a agentKind, r records) {
		cluster := stepGiven(c, r, "scope_cluster")
		if !strings.Contains(cluster.Text(), "workers 2") {
			c.fatalf("the cluster did not start with two workers; the point is moot:\n%s", clip(cluster.Text(), 1500))
		}
		g := stepGiven(c, r, "scope_timeout")
		if a.errorFlag && (g.IsError == nil || !*g.IsError) {
			c.errorf("%s does not flag the timed-out cell as an error", a.name)
		}
		if !scopeEnded.MatchString(g.Text()) {
			c.errorf("the timeout does not say the variables survived and name the cell's sleep it ended by SIGINT:\n%s", clip(g.Text(), 1500))
		}
		if strings.Contains(g.Text(), "earlier cells ended") {
			c.errorf("the timeout ended processes of earlier cells:\n%s", clip(g.Text(), 1500))
		}
		after := stepGiven(c, r, "scope_after")
		notError(c, a, after)
		if !scopeAfter.MatchString(after.Text()) {
			c.errorf("after the timeout the cluster's two workers and the earlier Popen should run on (and the cell's own sleep be ended by SIGINT), and the cluster compute 42: the model read\n%s", clip(after.Text(), 1500))
		}
		for _, id := range []string{"scope_after", "scope_later"} {
			if m := scopeDying.FindString(stepGiven(c, r, id).Text()); m != "" {
				c.errorf("%s's result carries %q, what a dying process of an earlier cell prints:\n%s", id, m, clip(stepGiven(c, r, id).Text(), 1500))
			}
		}
	}}
}

// TestModelViewScopeRule checks scopePoint on made-up records: it accepts what this
// round's server gives and refuses what the server before it gave.
func TestModelViewScopeRule(t *testing.T) {
	const run = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"
	yes := true
	good := map[string]*given{
		"scope_cluster": {Texts: []string{"workers 2\n", "[ok; generation 1; run " + run + "]"}},
		"scope_timeout": {IsError: &yes, Texts: []string{"Execution timed out after 1 s; variables preserved; the interrupt ended the cell's processes sleep (pid 4242, SIGINT); " +
			"for a longer cell pass a larger timeout (up to 3600 s), or start it with python_start and poll python_run\n[failed; generation 1; run " + run + "]"}},
		"scope_after": {Texts: []string{"after 2 None -2 42\n", "[ok; generation 1; run " + run + "]"}},
		"scope_later": {Texts: []string{"later\n", "[ok; generation 1; run " + run + "]"}},
	}
	old := map[string]*given{
		"scope_cluster": good["scope_cluster"],
		"scope_timeout": {IsError: &yes, Texts: []string{"Execution timed out after 1 s; variables preserved; for a longer cell pass a larger timeout (up to 3600 s), " +
			"or start it with python_start and poll python_run\n[failed; generation 1; run " + run + "]"}},
		"scope_after": {Texts: []string{"after 0 -2 -2 ", "[stderr]\nProcess Dask Worker process (from Nanny):\nTraceback (most recent call last):\nKeyboardInterrupt\n[failed; generation 1]"}},
		"scope_later": good["scope_later"],
	}
	recordsOf := madeUpRecords
	p := scopePoint()
	if f := runCheck(func(c *checker) { p.check(c, claudeCode, recordsOf(good, claudeCode)) }); len(f) > 0 {
		t.Errorf("this round's text form is refused: %q", f)
	}
	if f := runCheck(func(c *checker) { p.check(c, claudeCode, recordsOf(old, claudeCode)) }); len(f) == 0 {
		t.Errorf("the text form before this round passes: the rule proves nothing")
	}
}

// madeUpRecords are records of what a model was given, made up for a rule's test: one
// step per entry, named by its key.
func madeUpRecords(m map[string]*given, a agentKind) records {
	r := records{given: map[string]*given{}}
	for id, g := range m {
		c := *g
		c.Step = id
		if a.join != "" { // a CLI that joins text blocks (opencode) gives one string
			c.Texts = []string{strings.Join(c.Texts, a.join)}
		}
		r.given[id] = &c
		r.order = append(r.order, id)
	}
	return r
}
