package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The peers figure with a plain synchronous Python stdio client: the client whose own
// overhead is the largest of those an agent's tooling is likely to use (a JSON encode and
// decode in Python around every call), so the ratio between two servers is the most
// diluted. Each server runs under a client process of its own (pyClientProgram, on the
// bench's interpreter) that starts it, shakes hands, and on each line "N" from the bench
// runs N cells and answers with their round trips, timed in the client from just before
// the request's write to just after its reply was decoded. The bench alternates the
// servers' rounds as it does for the Go client.

// pyClientProgram is the client: argv[1] the cell's tool, argv[2] its other arguments
// (JSON), argv[3] the text the result must contain, argv[4:] the server's command line.
const pyClientProgram = `import json, subprocess, sys, time
tool, extra, want, argv = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4:]
server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
next_id = 0
def call(method, params):
    global next_id
    next_id += 1
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}).encode() + b"\n")
    server.stdin.flush()
    while True:
        line = server.stdout.readline()
        if not line:
            raise SystemExit("the server closed its stdout")
        message = json.loads(line)
        if message.get("id") == next_id and "method" not in message:
            if "error" in message:
                raise SystemExit("%s: %s" % (method, message["error"]))
            return message["result"]
        if "method" in message and "id" in message:
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}).encode() + b"\n")
            server.stdin.flush()
call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "repl-mcp-bench-py", "version": "1"}})
server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
server.stdin.flush()
call("tools/list", {})
arguments = dict(extra, code="1 + 1")
def cell():
    start = time.perf_counter_ns()
    result = call("tools/call", {"name": tool, "arguments": arguments})
    took = time.perf_counter_ns() - start
    text = "".join(c.get("text", "") for c in result.get("content", [])) + json.dumps(result.get("structuredContent"))
    if result.get("isError") or want not in text or "Error" in text:
        raise SystemExit("unexpected result: %.300s" % text)
    return took
cell()  # a server may start its interpreter on the first
sys.stdout.write("ready\n")
sys.stdout.flush()
for line in sys.stdin:
    sys.stdout.write(json.dumps([cell() for _ in range(int(line))]) + "\n")
    sys.stdout.flush()
server.stdin.close()
server.wait(10)
`

// pyClientResult is one server's warm cells through the Python client.
type pyClientResult struct {
	name string
	warm []time.Duration
	err  error
}

// measurePyClient runs rounds of cells on each spec (repl-mcp first) through the Python
// client, in an order that rotates every round.
func (b *bench) measurePyClient(ctx context.Context, specs []peerSpec) []*pyClientResult {
	pc := b.cfg.Peers
	var results []*pyClientResult
	clients := map[*pyClientResult]*child{}
	for _, p := range specs {
		r := &pyClientResult{name: p.name}
		results = append(results, r)
		if p.err != nil {
			r.err = p.err
			continue
		}
		extra, _ := json.Marshal(p.args0)
		args := append([]string{"-u", "-c", pyClientProgram, p.tool, string(extra), "2", p.program}, p.args...)
		c, err := startChild(ctx, p.name+" under the Python client", b.dir, b.cfg.Python, args...)
		if err == nil {
			var line []byte
			if line, err = c.readLine(ctx, time.Now().Add(peerStartTimeout)); err == nil && string(line) != "ready" {
				err = fmt.Errorf("the Python client said %.200q", line)
			}
			if err != nil {
				err = fmt.Errorf("%w; stderr ends: %s", err, lastLines(c.stderr.String(), 3))
				c.stop()
				c.signalGroup(syscall.SIGKILL)
			}
		}
		if err != nil {
			r.err = err
			continue
		}
		clients[r] = c
		defer func() {
			c.stop()
			c.signalGroup(syscall.SIGKILL) // the server is in the client's process group
		}()
	}
	for round := 0; round < pc.Rounds && ctx.Err() == nil; round++ {
		for k := range results {
			r := results[(round+k)%len(results)]
			c := clients[r]
			if c == nil || r.err != nil {
				continue
			}
			deadline := time.Now().Add(time.Duration(pc.RoundCells) * peerCellTimeout)
			err := c.writeLine(ctx, []byte(strconv.Itoa(pc.RoundCells)), deadline)
			var line []byte
			if err == nil {
				line, err = c.readLine(ctx, deadline)
			}
			var ns []int64
			if err == nil {
				err = json.Unmarshal(line, &ns)
			}
			if err != nil {
				r.err = fmt.Errorf("round %d: %w; stderr ends: %s", round+1, err, lastLines(c.stderr.String(), 3))
				continue
			}
			for _, n := range ns {
				r.warm = append(r.warm, time.Duration(n))
			}
		}
	}
	return results
}

// pyClientReport is the Python client's table, and the target's line.
func pyClientReport(cfg config, results []*pyClientResult) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nThe same cell through a plain synchronous Python stdio client (`json` and pipes, on the same interpreter; "+
		"timed in the client from the request's write to its reply decoded), %d interleaved rounds of %d cells:\n\n", cfg.Peers.Rounds, cfg.Peers.RoundCells)
	sb.WriteString("| server | warm p50 | warm p90 | p50 vs repl-mcp |\n|---|---|---|---|\n")
	var ours time.Duration
	if r := results[0]; len(r.warm) > 0 {
		ours = median(r.warm)
	}
	for _, r := range results {
		if len(r.warm) == 0 {
			fmt.Fprintf(&sb, "| %s | could not run: %s | | |\n", r.name, oneLine(r.err))
			continue
		}
		vs := ""
		if ours > 0 {
			vs = fmtRatio(durRatio(median(r.warm), ours))
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", r.name, fmtDur(median(r.warm)), fmtDur(percentile(r.warm, 90)), vs)
	}
	sb.WriteString("\n")
	var fastest *pyClientResult
	for _, r := range results[1:] {
		if len(r.warm) > 0 && (fastest == nil || median(r.warm) < median(fastest.warm)) {
			fastest = r
		}
	}
	if fastest != nil && ours > 0 {
		ratio := durRatio(median(fastest.warm), ours)
		fmt.Fprintf(&sb, "- With the Python client, %s takes %s a warm cell: %s repl-mcp's %s (target: at least 5x; %s).\n",
			fastest.name, fmtDur(median(fastest.warm)), fmtRatio(ratio), fmtDur(ours), metText(ratio >= 5))
	}
	for _, r := range results {
		if r.err != nil && len(r.warm) > 0 {
			fmt.Fprintf(&sb, "- %s stopped early under the Python client: %s\n", r.name, oneLine(r.err))
		}
	}
	return sb.String()
}
