package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Long work (docs/contract.md §5.6): an execution still running after yield_after
// goes on as a background run, and its call answers with the run's live snapshot.

// textFormYield is yield_after's default for the clients that get the text form:
// under the 60 s that Codex (tool_timeout_sec) and the MCP TypeScript SDK's
// request timeout allow a call, so that their deadline never interrupts a cell.
const textFormYield = 50 * time.Second

// yieldAfter is a call's yield_after: the one it passed, else the task threshold
// for a call that declared the tasks extension (it leaves as a task, tasks.go),
// else the server's --yield-after, else textFormYield for a text-form client and no
// yield for others (which block until the end, as the reference does).
func (s *Server) yieldAfter(ctx context.Context, given *float64) time.Duration {
	switch {
	case given != nil:
		return seconds(*given)
	case s.taskCall(ctx):
		return s.tasks.after
	case s.yieldDefault != nil:
		return *s.yieldDefault
	}
	if call, _ := ctx.Value(callRequestKey{}).(*mcp.CallToolRequest); call != nil && s.formFor(call).text() {
		return textFormYield
	}
	return 0
}

// runningRun is a run still going, as a tool's value: the live snapshot, which is
// its JSON, and what its text needs besides. yielded: the execution that started it
// (its text says it is still running); wait: the wait its text proposes.
type runningRun struct {
	*repl.Snapshot
	yielded bool
	wait    time.Duration
	// skipped: the output starts where an earlier answer about the run stopped
	// (readRun).
	skipped bool
}

// executedOrYielded is an execution's value: its result, or the run it became after
// yield.
func executedOrYielded(res *repl.Result, snap *repl.Snapshot, yield time.Duration) any {
	if snap != nil {
		return runningRun{Snapshot: snap, yielded: true, wait: yield}
	}
	return executed(res)
}

// proposedWait is the python_run wait a text proposes to a client whose calls yield
// after yield: that long (it is under the client's deadline), at most MaxWait, and
// MaxWait for a client whose calls do not yield.
func proposedWait(yield time.Duration) time.Duration {
	if yield <= 0 {
		return repl.MaxWait
	}
	return min(yield, repl.MaxWait)
}

// waitHint tells the model how to wait for a run in one call that returns only
// what it has not read.
func waitHint(s *repl.Snapshot, wait time.Duration) string {
	args, _ := json.Marshal(struct {
		RunID        string  `json:"run_id"`
		Wait         float64 `json:"wait"`
		StdoutOffset int64   `json:"stdout_offset"`
		StderrOffset int64   `json:"stderr_offset"`
		// Native output is offset-polled too; left out while there is none.
		NativeOffset int64 `json:"native_stderr_offset,omitempty"`
	}{s.RunID, proposedWait(wait).Seconds(), s.StdoutEnd, s.StderrEnd, s.NativeStderrEnd})
	return fmt.Sprintf("python_run %s", args)
}

// modelText is the run's output so far and how to wait for the rest (snapshotText).
func (r runningRun) modelText() reply { return snapshotText(r) }

// snapshotText is a run still going: its output so far within modelTextLimit, and
// a footer that says how to wait for the rest (and, for the execution that yielded,
// that it is still running).
func snapshotText(r runningRun) reply {
	s := r.Snapshot
	ps := []part{
		{text: s.Stdout, what: "stdout"},
		{label: "[stderr]", text: s.Stderr + s.NativeStderr, what: "stderr"},
	}
	items := []string{string(s.Status), "run " + s.RunID}
	if r.yielded {
		items = []string{"still running as run " + s.RunID}
	} else if s.Code != "" {
		// A poller may not have started the run (an agent that shares the
		// session): what it runs tells.
		items = append(items, codeItem(s.Code))
	}
	items = append(items, fmt.Sprintf("%.1f s so far", s.ElapsedMS/1000), fmt.Sprintf("generation %d", s.Generation))
	for _, c := range []struct {
		name string
		cut  bool
	}{{"stdout", s.LiveTruncated.Stdout}, {"stderr", s.LiveTruncated.Stderr}} {
		if c.cut {
			items = append(items, fmt.Sprintf("live %s cut at %s bytes; the result keeps its own", c.name, count(s.OutputLimit)))
		}
	}
	if r.skipped {
		items = append(items, msgEarlierOutput)
	}
	foot := "[" + strings.Join(items, "; ") + "; wait for more with " + waitHint(s, r.wait) + "]"
	shares := fitShares([]int{visibleLen(ps[0].text), visibleLen(ps[1].text)}, modelTextLimit-len(foot)-64)
	for i := range ps {
		ps[i].text = cutMiddle(ps[i].text, shares[i], ps[i].what)
	}
	return withFooter(joinParts(ps), foot)
}
