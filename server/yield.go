package server

import (
	"context"
	"encoding/json"
	"fmt"
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

// yieldAfter is a call's yield_after: the one it passed, else the server's
// --yield-after, else textFormYield for a text-form client and no yield for others
// (which block until the end, as the reference does).
func (s *Server) yieldAfter(ctx context.Context, given *float64) time.Duration {
	switch {
	case given != nil:
		return seconds(*given)
	case s.yieldDefault != nil:
		return *s.yieldDefault
	}
	if call, _ := ctx.Value(callRequestKey{}).(*mcp.CallToolRequest); call != nil && s.formFor(call) == formText {
		return textFormYield
	}
	return 0
}

// yieldedRun is an execution that outlived yield_after: its live snapshot, from
// byte 0, which python_run goes on from.
type yieldedRun struct{ *repl.Snapshot }

// executedOrYielded is an execution's value: its result, or the run it became.
func executedOrYielded(res *repl.Result, snap *repl.Snapshot) any {
	if snap != nil {
		return yieldedRun{snap}
	}
	return executed(res)
}

// waitHint tells the model how to wait for a run in one call that returns only
// what it has not read.
func waitHint(s *repl.Snapshot) string {
	args, _ := json.Marshal(struct {
		RunID        string `json:"run_id"`
		Wait         int    `json:"wait"`
		StdoutOffset int64  `json:"stdout_offset"`
		StderrOffset int64  `json:"stderr_offset"`
	}{s.RunID, int(repl.MaxWait.Seconds()), s.StdoutEnd, s.StderrEnd})
	return fmt.Sprintf("python_run %s", args)
}
