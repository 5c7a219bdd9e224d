package mcpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	mcpcDefaultTimeout  = 60 * time.Second
	mcpcFrameLimit      = 1 << 20 // the MCP stdio line limit, in and out
	mcpcTranscriptLines = 80
	mcpcTranscriptWidth = 600
	mcpcStderrLimit     = 256 << 10
	mcpcClientVersion   = "2025-11-25"
)

// Main is the mcpc command: test binaries register it in testscript.Main (the root
// package's main_test.go), and a script runs it as `exec mcpc SCRIPT`. It returns the
// exit status.
func Main() int {
	args := os.Args[1:]
	if len(args) < 1 || (len(args) > 1 && args[1] != "--") || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: mcpc SCRIPT [-- SERVER-ARGS...]")
		return 2
	}
	var serverArgs []string
	if len(args) > 1 {
		serverArgs = args[2:]
	}
	src, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpc: %v\n", err)
		return 2
	}
	c := newMCPClient(args[0])
	if err := c.start(serverArgs); err != nil {
		fmt.Fprintf(os.Stderr, "mcpc: starting repl-mcp: %v\n", err)
		return 1
	}
	return c.run(strings.Split(string(src), "\n"))
}

// progressLog is what the server reported for one progress token.
type progressLog struct {
	key   string           // the request's id key
	notes []map[string]any // each notification's params, with received_ms
	last  float64          // the last progress value
}

// rpcMessage is one line the server wrote.
type rpcMessage struct {
	raw []byte
	v   map[string]any
	rtt time.Duration // round trip, for replies to our requests
}

type mcpClient struct {
	script string

	cmd        *exec.Cmd
	stdin      *os.File
	stdinShut  bool
	stderrDone chan struct{}

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change below
	replies     map[string][]*rpcMessage
	answered    map[string]bool // id keys whose reply has arrived
	sentAt      map[string]time.Time
	readDone    bool
	protocolErr error
	exited      bool
	exitState   *os.ProcessState
	transcript  []string
	curLine     string

	nextID int
	named  map[string]string // send NAME -> id key
	// progress holds, by token, what notifications/progress brought for the
	// request sent with send-progress (guarded by mu).
	progress  map[string]*progressLog
	last      *rpcMessage
	vars      map[string]string
	stateless bool
	proto     string
	client    string         // clientInfo name
	caps      map[string]any // clientCapabilities of stateless requests
	timeout   time.Duration
	deadline  time.Time // from MCPC_DEADLINE; zero if none
}

func newMCPClient(script string) *mcpClient {
	c := &mcpClient{
		script:   script,
		changed:  make(chan struct{}),
		replies:  map[string][]*rpcMessage{},
		answered: map[string]bool{},
		sentAt:   map[string]time.Time{},
		named:    map[string]string{},
		progress: map[string]*progressLog{},
		vars:     map[string]string{},
		proto:    mcpcClientVersion,
		client:   "mcpc",
		timeout:  mcpcDefaultTimeout,
	}
	if d := os.Getenv("MCPC_DEADLINE"); d != "" {
		if t, err := time.Parse(time.RFC3339Nano, d); err == nil {
			c.deadline = t
		}
	}
	return c
}

// broadcast wakes every waiter; c.mu must be held.
func (c *mcpClient) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *mcpClient) note(dir string, line []byte) {
	s := string(line)
	if len(s) > mcpcTranscriptWidth {
		s = s[:mcpcTranscriptWidth] + fmt.Sprintf("... (%d bytes)", len(line))
	}
	c.mu.Lock()
	c.transcript = append(c.transcript, dir+" "+s)
	if len(c.transcript) > mcpcTranscriptLines {
		c.transcript = c.transcript[len(c.transcript)-mcpcTranscriptLines:]
	}
	c.mu.Unlock()
}

func (c *mcpClient) start(args []string) error {
	path, err := exec.LookPath("repl-mcp")
	if err != nil {
		return err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	c.cmd = exec.Command(path, args...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, errW
	if err := c.cmd.Start(); err != nil {
		return err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	c.stdin = inW
	c.stderrDone = make(chan struct{})
	go c.copyStderr(errR)
	go c.readLoop(outR)
	go func() {
		c.cmd.Wait()
		c.mu.Lock()
		c.exited = true
		c.exitState = c.cmd.ProcessState
		c.broadcast()
		c.mu.Unlock()
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		sig := <-sigs
		c.mu.Lock()
		line := c.curLine
		c.mu.Unlock()
		fmt.Fprintf(os.Stderr, "mcpc: %v while running %s\n", sig, line)
		c.printTranscript()
		c.cmd.Process.Kill()
		os.Exit(1)
	}()
	return nil
}

func (c *mcpClient) copyStderr(r *os.File) {
	defer close(c.stderrDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	written := 0
	for sc.Scan() {
		if written > mcpcStderrLimit {
			continue
		}
		line := "[repl-mcp] " + sc.Text() + "\n"
		written += len(line)
		if written > mcpcStderrLimit {
			line = "[repl-mcp] ... (server stderr truncated)\n"
		}
		os.Stderr.WriteString(line)
	}
}

func (c *mcpClient) readLoop(r *os.File) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.receive(bytes.TrimSuffix(line, []byte("\n")))
		}
		if err != nil {
			c.mu.Lock()
			c.readDone = true
			c.broadcast()
			c.mu.Unlock()
			return
		}
	}
}

func (c *mcpClient) receive(line []byte) {
	now := time.Now()
	c.note("<-", line)
	fail := func(format string, args ...any) {
		c.mu.Lock()
		if c.protocolErr == nil {
			c.protocolErr = fmt.Errorf(format, args...)
		}
		c.broadcast()
		c.mu.Unlock()
	}
	if len(line)+1 > mcpcFrameLimit {
		fail("server wrote a %d-byte line on stdout, over the 1 MiB frame limit", len(line)+1)
		return
	}
	var v map[string]any
	if err := json.Unmarshal(line, &v); err != nil {
		fail("server wrote a non-JSON line on stdout: %q (%v)", abbrev(string(line), 200), err)
		return
	}
	if v["jsonrpc"] != "2.0" {
		fail("server wrote a message without jsonrpc 2.0: %s", abbrev(string(line), 200))
		return
	}
	if method, isCall := v["method"]; isCall {
		if method == "notifications/progress" {
			if err := c.noteProgress(v, now); err != nil {
				fail("%v: %s", err, abbrev(string(line), 200))
			}
		}
		// Other notifications and requests from the server: kept in the transcript only.
		return
	}
	id, ok := v["id"]
	if !ok {
		fail("server wrote a reply without an id: %s", abbrev(string(line), 200))
		return
	}
	key := compactJSON(id)
	c.mu.Lock()
	c.answered[key] = true
	msg := &rpcMessage{raw: line, v: v}
	if t, ok := c.sentAt[key]; ok {
		msg.rtt = now.Sub(t)
	}
	c.replies[key] = append(c.replies[key], msg)
	c.broadcast()
	c.mu.Unlock()
}

// noteProgress records a notifications/progress, or says what is wrong with it: a
// token no request of ours carries, a notification after its request's reply (the
// server must order them), or progress that does not increase.
func (c *mcpClient) noteProgress(v map[string]any, now time.Time) error {
	params, _ := v["params"].(map[string]any)
	token, ok := params["progressToken"].(string)
	c.mu.Lock()
	defer c.mu.Unlock()
	log := c.progress[token]
	switch {
	case !ok || log == nil:
		return errors.New("notifications/progress for a token that no send-progress request carries")
	case c.answered[log.key]:
		return fmt.Errorf("notifications/progress for %q after the reply to its request", token)
	}
	progress, _ := params["progress"].(float64)
	if len(log.notes) > 0 && progress <= log.last {
		return fmt.Errorf("notifications/progress for %q: progress %v does not increase (was %v)", token, progress, log.last)
	}
	note := make(map[string]any, len(params)+1)
	for k, val := range params {
		note[k] = val
	}
	note["received_ms"] = float64(now.Sub(c.sentAt[log.key]).Milliseconds())
	log.notes = append(log.notes, note)
	log.last = progress
	c.broadcast()
	return nil
}

// bound returns how long a wait of d may last, given the test deadline.
func (c *mcpClient) bound(d time.Duration) time.Duration {
	if !c.deadline.IsZero() {
		if left := time.Until(c.deadline); left < d {
			return max(left, 0)
		}
	}
	return d
}

// waitFor waits up to d for cond, which runs with c.mu held.
func (c *mcpClient) waitFor(what string, d time.Duration, cond func() (bool, error)) error {
	limit := c.bound(d)
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		c.mu.Lock()
		done, err := cond()
		ch := c.changed
		c.mu.Unlock()
		if err != nil || done {
			return err
		}
		select {
		case <-ch:
		case <-timer.C:
			if limit < d {
				return fmt.Errorf("test deadline reached after %v waiting for %s", limit, what)
			}
			return fmt.Errorf("no %s within %v", what, d)
		}
	}
}

func (c *mcpClient) exitDescription() string {
	if !c.exited {
		return "still running"
	}
	return c.exitState.String()
}

// waitReply waits for the reply with id key and makes it the last response.
func (c *mcpClient) waitReply(key, what string, d time.Duration) error {
	return c.waitFor(what, d, func() (bool, error) {
		if q := c.replies[key]; len(q) > 0 {
			c.last = q[0]
			c.replies[key] = q[1:]
			return true, nil
		}
		if c.protocolErr != nil {
			return false, c.protocolErr
		}
		if c.readDone {
			return false, fmt.Errorf("server closed its stdout before %s (server %s)", what, c.exitDescription())
		}
		return false, nil
	})
}

func (c *mcpClient) write(line []byte) error {
	if c.stdinShut {
		return errors.New("stdin already closed")
	}
	c.note("->", line)
	c.stdin.SetWriteDeadline(time.Now().Add(c.bound(c.timeout)))
	_, err := c.stdin.Write(line)
	return err
}

// request sends a request and returns its id key.
func (c *mcpClient) request(method string, params map[string]any) (string, error) {
	c.nextID++
	id := c.nextID
	if params == nil {
		params = map[string]any{}
	}
	if c.stateless {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = c.proto
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": c.client, "version": "0.1.0"}
		caps := c.caps
		if caps == nil {
			caps = map[string]any{}
		}
		meta["io.modelcontextprotocol/clientCapabilities"] = caps
		params["_meta"] = meta
	}
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return "", err
	}
	key := strconv.Itoa(id)
	c.mu.Lock()
	c.sentAt[key] = time.Now()
	c.mu.Unlock()
	return key, c.write(append(line, '\n'))
}

func (c *mcpClient) notify(method string, params map[string]any) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	line, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return c.write(append(line, '\n'))
}

// objectArg parses an optional JSON object argument.
func objectArg(s string) (map[string]any, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	m := make(map[string]any, len(raw))
	for k, v := range raw {
		m[k] = v
	}
	return m, nil
}

func (c *mcpClient) sendCall(tool, args string) (string, error) {
	return c.sendCallMeta(tool, args, nil)
}

// sendCallMeta sends tools/call with meta merged into its params' _meta.
func (c *mcpClient) sendCallMeta(tool, args string, meta map[string]any) (string, error) {
	params := map[string]any{"name": tool}
	if s := strings.TrimSpace(args); s != "" {
		if !json.Valid([]byte(s)) {
			return "", fmt.Errorf("arguments are not valid JSON: %s", abbrev(s, 200))
		}
		params["arguments"] = json.RawMessage(s)
	}
	if meta != nil {
		params["_meta"] = meta
	}
	return c.request("tools/call", params)
}

func (c *mcpClient) call(tool, args string) error {
	key, err := c.sendCall(tool, args)
	if err != nil {
		return err
	}
	return c.waitReply(key, "reply to tools/call "+tool, c.timeout)
}

var substRE = regexp.MustCompile(`\{\{([@A-Za-z_][^{}\s]*)\}\}`)
var arithRE = regexp.MustCompile(`^([A-Za-z_]\w*)([+-])(\d+)$`)

func (c *mcpClient) substitute(line string) (string, error) {
	var firstErr error
	out := substRE.ReplaceAllStringFunc(line, func(m string) string {
		name := m[2 : len(m)-2]
		val, err := c.lookupVar(name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return val
	})
	return out, firstErr
}

func (c *mcpClient) lookupVar(name string) (string, error) {
	if file, ok := strings.CutPrefix(name, "@"); ok {
		data, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(string(data))
		return string(b), nil
	}
	if m := arithRE.FindStringSubmatch(name); m != nil {
		base, err := c.lookupVar(m[1])
		if err != nil {
			return "", err
		}
		x, err := strconv.ParseInt(base, 10, 64)
		if err != nil {
			return "", fmt.Errorf("{{%s}}: %s is %q, not an integer", name, m[1], base)
		}
		n, _ := strconv.ParseInt(m[3], 10, 64)
		if m[2] == "-" {
			n = -n
		}
		return strconv.FormatInt(x+n, 10), nil
	}
	if v, ok := c.vars[name]; ok {
		return v, nil
	}
	if v, ok := os.LookupEnv(name); ok {
		return v, nil
	}
	return "", fmt.Errorf("unknown variable {{%s}}", name)
}

// run executes the script and returns the exit status.
func (c *mcpClient) run(lines []string) int {
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d: %s", c.script, i+1, abbrev(line, 300))
		c.mu.Lock()
		c.curLine = where
		c.mu.Unlock()
		expanded, err := c.substitute(line)
		if err == nil {
			if expanded != line {
				where += "\n\t(expanded: " + abbrev(expanded, 300) + ")"
			}
			err = c.step(expanded)
		}
		if err != nil {
			return c.fail(where, err)
		}
	}
	where := c.script + ": at end of script"
	c.mu.Lock()
	exited := c.exited
	perr := c.protocolErr
	c.mu.Unlock()
	if perr != nil {
		return c.fail(where, perr)
	}
	if !exited {
		if !c.stdinShut {
			c.stdinShut = true
			c.stdin.Close()
		}
		if err := c.waitExit(10*time.Second, "0"); err != nil {
			return c.fail(where+" (closing stdin must stop the server)", err)
		}
	}
	// Whatever the server wrote while stopping must be protocol too.
	c.waitFor("end of the server's stdout", 2*time.Second, func() (bool, error) { return c.readDone, nil })
	c.mu.Lock()
	perr = c.protocolErr
	c.mu.Unlock()
	if perr != nil {
		return c.fail(where, perr)
	}
	c.finishStderr()
	return 0
}

func (c *mcpClient) fail(where string, err error) int {
	fmt.Fprintf(os.Stderr, "mcpc: FAIL %s\n\t%v\n", where, err)
	c.printTranscript()
	// Stop the server: closing stdin first, then by force.
	if !c.stdinShut {
		c.stdinShut = true
		c.stdin.Close()
	}
	if c.waitFor("server exit", 5*time.Second, func() (bool, error) { return c.exited, nil }) != nil {
		c.cmd.Process.Kill()
		c.waitFor("server exit after SIGKILL", 5*time.Second, func() (bool, error) { return c.exited, nil })
	}
	c.finishStderr()
	return 1
}

func (c *mcpClient) finishStderr() {
	select {
	case <-c.stderrDone:
	case <-time.After(time.Second):
	}
}

func (c *mcpClient) printTranscript() {
	c.mu.Lock()
	t := append([]string(nil), c.transcript...)
	c.mu.Unlock()
	fmt.Fprintf(os.Stderr, "mcpc: transcript (last %d lines):\n", len(t))
	for _, l := range t {
		fmt.Fprintf(os.Stderr, "\t%s\n", l)
	}
}
