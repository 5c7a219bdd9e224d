// The mcpc client's script steps: one line of a script, run.

package mcpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// splitWords splits off n leading words and returns them and the rest.
func splitWords(s string, n int) ([]string, string) {
	var words []string
	s = strings.TrimSpace(s)
	for len(words) < n && s != "" {
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			words = append(words, s)
			s = ""
			break
		}
		words = append(words, s[:i])
		s = strings.TrimSpace(s[i:])
	}
	return words, s
}

func (c *mcpClient) step(line string) error {
	c.mu.Lock()
	perr := c.protocolErr
	c.mu.Unlock()
	if perr != nil {
		return perr
	}
	w, rest := splitWords(line, 1)
	name := w[0]
	switch name {
	case "init":
		version := mcpcClientVersion
		if rest != "" {
			version = rest
		}
		c.proto = version
		key, err := c.request("initialize", map[string]any{
			"protocolVersion": version,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]any{"name": c.client, "version": "0.1.0"},
		})
		if err != nil {
			return err
		}
		if err := c.waitReply(key, "reply to initialize", c.timeout); err != nil {
			return err
		}
		if _, ok := c.last.v["result"]; !ok {
			return fmt.Errorf("initialize failed: %s", abbrev(string(c.last.raw), 400))
		}
		return c.notify("notifications/initialized", nil)

	case "client":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return errors.New("usage: client NAME")
		}
		c.client = rest
		return nil

	case "capabilities":
		caps, err := objectArg(rest)
		if err != nil || caps == nil {
			return errors.New("usage: capabilities JSON (an object)")
		}
		c.caps = caps
		return nil

	case "proto":
		if rest == "" {
			return errors.New("usage: proto VERSION")
		}
		c.stateless, c.proto = true, rest
		return nil

	case "call":
		w, args := splitWords(rest, 1)
		if len(w) != 1 {
			return errors.New("usage: call TOOL [JSON]")
		}
		return c.call(w[0], args)

	case "list":
		key, err := c.request("tools/list", nil)
		if err != nil {
			return err
		}
		return c.waitReply(key, "reply to tools/list", c.timeout)

	case "request", "notify":
		w, args := splitWords(rest, 1)
		if len(w) != 1 {
			return fmt.Errorf("usage: %s METHOD [JSON]", name)
		}
		params, err := objectArg(args)
		if err != nil {
			return err
		}
		if name == "notify" {
			return c.notify(w[0], params)
		}
		key, err := c.request(w[0], params)
		if err != nil {
			return err
		}
		return c.waitReply(key, "reply to "+w[0], c.timeout)

	case "send", "send-progress":
		w, args := splitWords(rest, 2)
		if len(w) != 2 {
			return fmt.Errorf("usage: %s NAME TOOL [JSON]", name)
		}
		if _, dup := c.named[w[0]]; dup {
			return fmt.Errorf("request name %q already used", w[0])
		}
		var meta map[string]any
		if name == "send-progress" {
			meta = map[string]any{"progressToken": w[0]}
			// Registered before the request goes out: its first notification may
			// arrive before sendCallMeta returns. The id is the next one.
			c.mu.Lock()
			c.progress[w[0]] = &progressLog{key: strconv.Itoa(c.nextID + 1)}
			c.mu.Unlock()
		}
		key, err := c.sendCallMeta(w[1], args, meta)
		if err != nil {
			return err
		}
		c.named[w[0]] = key
		return nil

	case "progress":
		c.mu.Lock()
		log := c.progress[rest]
		var notes []any
		if log != nil {
			for _, n := range log.notes {
				notes = append(notes, n)
			}
		}
		c.mu.Unlock()
		if log == nil {
			return fmt.Errorf("no request was sent with send-progress as %q", rest)
		}
		if notes == nil {
			notes = []any{}
		}
		v := map[string]any{"progress": notes}
		raw, _ := json.Marshal(v)
		c.last = &rpcMessage{raw: raw, v: v}
		return nil

	case "wait":
		w, durs := splitWords(rest, 1)
		if len(w) != 1 {
			return errors.New("usage: wait NAME [DUR]")
		}
		key, ok := c.named[w[0]]
		if !ok {
			return fmt.Errorf("no request was sent as %q", w[0])
		}
		d, err := c.optDuration(durs)
		if err != nil {
			return err
		}
		return c.waitReply(key, "reply to "+w[0], d)

	case "cancel":
		key, ok := c.named[rest]
		if !ok {
			return fmt.Errorf("no request was sent as %q", rest)
		}
		return c.notify("notifications/cancelled", map[string]any{
			"requestId": json.RawMessage(key),
			"reason":    "cancelled by mcpc script",
		})

	case "rawline":
		return c.write([]byte(rest + "\n"))

	case "rawfile":
		data, err := os.ReadFile(rest)
		if err != nil {
			return err
		}
		return c.write(data)

	case "wait-id":
		w, durs := splitWords(rest, 1)
		if len(w) != 1 || !json.Valid([]byte(w[0])) {
			return errors.New("usage: wait-id JSONID [DUR]")
		}
		d, err := c.optDuration(durs)
		if err != nil {
			return err
		}
		var id any
		json.Unmarshal([]byte(w[0]), &id)
		return c.waitReply(compactJSON(id), "reply with id "+w[0], d)

	case "poll":
		return c.poll(rest, c.call)

	case "poll-request":
		return c.poll(rest, func(method, args string) error {
			params, err := objectArg(args)
			if err != nil {
				return err
			}
			key, err := c.request(method, params)
			if err != nil {
				return err
			}
			return c.waitReply(key, "reply to "+method, c.timeout)
		})

	case "set-timeout":
		d, err := time.ParseDuration(rest)
		if err != nil {
			return err
		}
		c.timeout = d
		return nil

	case "expect":
		if c.last == nil {
			return errors.New("no response yet")
		}
		return checkAssertion(c.last.v, rest)

	case "expect-size":
		if c.last == nil {
			return errors.New("no response yet")
		}
		w, want := splitWords(rest, 1)
		if len(w) != 1 {
			return errors.New("usage: expect-size OP N")
		}
		n, err := strconv.ParseFloat(want, 64)
		if err != nil {
			return err
		}
		if !compareNumbers(float64(len(c.last.raw)), w[0], n) {
			return fmt.Errorf("reply line is %d bytes, want %s %s", len(c.last.raw), w[0], want)
		}
		return nil

	case "expect-elapsed":
		if c.last == nil {
			return errors.New("no response yet")
		}
		w, want := splitWords(rest, 1)
		if len(w) != 1 {
			return errors.New("usage: expect-elapsed OP DUR")
		}
		d, err := time.ParseDuration(want)
		if err != nil {
			return err
		}
		if !compareNumbers(float64(c.last.rtt), w[0], float64(d)) {
			return fmt.Errorf("round trip took %v, want %s %v", c.last.rtt, w[0], d)
		}
		return nil

	case "save":
		w, path := splitWords(rest, 1)
		if len(w) != 1 || path == "" {
			return errors.New("usage: save VAR PATH")
		}
		if c.last == nil {
			return errors.New("no response yet")
		}
		rs, err := resolvePath(c.last.v, path)
		if err != nil {
			return err
		}
		if len(rs) != 1 || !rs[0].ok {
			return fmt.Errorf("%s is absent in %s", path, abbrev(string(c.last.raw), 400))
		}
		if s, ok := rs[0].v.(string); ok {
			c.vars[w[0]] = s
		} else {
			c.vars[w[0]] = compactJSON(rs[0].v)
		}
		return nil

	case "save-match":
		w, re := splitWords(rest, 2)
		if len(w) != 2 || re == "" {
			return errors.New("usage: save-match VAR PATH REGEX")
		}
		if c.last == nil {
			return errors.New("no response yet")
		}
		pattern, err := regexp.Compile(re)
		if err != nil {
			return err
		}
		if pattern.NumSubexp() < 1 {
			return fmt.Errorf("save-match: %s has no group", re)
		}
		rs, err := resolvePath(c.last.v, w[1])
		if err != nil {
			return err
		}
		s, isString := rs[0].v.(string)
		if len(rs) != 1 || !isString {
			return fmt.Errorf("%s is not a string in %s", w[1], abbrev(string(c.last.raw), 400))
		}
		m := pattern.FindStringSubmatch(s)
		if m == nil {
			return fmt.Errorf("%s does not match /%s/: %s", w[1], re, describe(s))
		}
		c.vars[w[0]] = m[1]
		return nil

	case "save-reply":
		if rest == "" {
			return errors.New("usage: save-reply FILE")
		}
		if c.last == nil {
			return errors.New("no response yet")
		}
		stable, err := stableReply(c.last.raw, goldenPaths())
		if err != nil {
			return err
		}
		return os.WriteFile(rest, stable, 0o644)

	case "server-pid":
		if rest == "" {
			return errors.New("usage: server-pid VAR")
		}
		c.vars[rest] = strconv.Itoa(c.cmd.Process.Pid)
		return nil

	case "signal-server":
		sig, err := parseSignal(rest)
		if err != nil {
			return err
		}
		return c.cmd.Process.Signal(sig)

	case "close-stdin":
		if c.stdinShut {
			return errors.New("stdin already closed")
		}
		c.stdinShut = true
		return c.stdin.Close()

	case "wait-exit":
		w, _ := splitWords(rest, 2)
		if len(w) != 2 {
			return errors.New("usage: wait-exit DUR STATUS")
		}
		d, err := time.ParseDuration(w[0])
		if err != nil {
			return err
		}
		return c.waitExit(d, w[1])

	case "pid-alive":
		pid, err := strconv.Atoi(rest)
		if err != nil {
			return fmt.Errorf("pid-alive: bad pid %q", rest)
		}
		if alive, how := PIDState(pid); !alive {
			return fmt.Errorf("process %d is not alive (%s)", pid, how)
		}
		return nil

	case "pid-gone":
		w, _ := splitWords(rest, 3)
		if len(w) != 3 || w[1] != "within" {
			return errors.New("usage: pid-gone PID within DUR")
		}
		pid, err := strconv.Atoi(w[0])
		if err != nil {
			return fmt.Errorf("pid-gone: bad pid %q", w[0])
		}
		d, err := time.ParseDuration(w[2])
		if err != nil {
			return err
		}
		end := time.Now().Add(c.bound(d))
		for {
			alive, how := PIDState(pid)
			if !alive {
				return nil
			}
			if time.Now().After(end) {
				return fmt.Errorf("process %d still alive after %v (%s)", pid, d, how)
			}
			time.Sleep(20 * time.Millisecond)
		}

	case "touch":
		return os.WriteFile(rest, nil, 0o644)

	case "file-absent", "file-exists":
		_, err := os.Stat(rest)
		switch {
		case name == "file-absent" && err == nil:
			return fmt.Errorf("%s exists", rest)
		case name == "file-exists" && err != nil:
			return err
		}
		return nil

	}
	return fmt.Errorf("unknown command %q", name)
}

func (c *mcpClient) optDuration(s string) (time.Duration, error) {
	if s == "" {
		return c.timeout, nil
	}
	return time.ParseDuration(s)
}

// poll: TOOL JSON until PATH OP [VALUE] within DUR
// poll does one request (a tool's call, or any request) until the assertion holds.
func (c *mcpClient) poll(rest string, do func(name, args string) error) error {
	const usage = "usage: poll TOOL|METHOD JSON until PATH OP [VALUE] within DUR"
	i := strings.LastIndex(rest, " within ")
	if i < 0 {
		return errors.New(usage)
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest[i+len(" within "):]))
	if err != nil {
		return err
	}
	rest = rest[:i]
	j := strings.LastIndex(rest, " until ")
	if j < 0 {
		return errors.New(usage)
	}
	assertion := strings.TrimSpace(rest[j+len(" until "):])
	w, args := splitWords(rest[:j], 1)
	if len(w) != 1 {
		return errors.New(usage)
	}
	end := time.Now().Add(c.bound(d))
	for n := 1; ; n++ {
		if err := do(w[0], args); err != nil {
			return err
		}
		err := checkAssertion(c.last.v, assertion)
		if err == nil {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("not true within %v (%d polls): %v", d, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *mcpClient) waitExit(d time.Duration, status string) error {
	err := c.waitFor("server exit", d, func() (bool, error) { return c.exited, nil })
	if err != nil {
		return err
	}
	ws, _ := c.exitState.Sys().(syscall.WaitStatus)
	if code, err := strconv.Atoi(status); err == nil {
		if !ws.Exited() || ws.ExitStatus() != code {
			return fmt.Errorf("server %s, want exit status %d", c.exitState, code)
		}
		return nil
	}
	sig, err := parseSignal(status)
	if err != nil {
		return err
	}
	if !ws.Signaled() || ws.Signal() != sig {
		return fmt.Errorf("server %s, want killed by %v", c.exitState, sig)
	}
	return nil
}

func parseSignal(s string) (syscall.Signal, error) {
	switch strings.TrimPrefix(strings.ToUpper(s), "SIG") {
	case "KILL":
		return syscall.SIGKILL, nil
	case "TERM":
		return syscall.SIGTERM, nil
	case "INT":
		return syscall.SIGINT, nil
	case "QUIT":
		return syscall.SIGQUIT, nil
	case "HUP":
		return syscall.SIGHUP, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// PIDState reports whether pid is a live process, and how it is; a zombie counts as
// gone. The pid-alive and pid-gone commands use it, and tests that wait for a process
// to go.
func PIDState(pid int) (alive bool, how string) {
	if pid <= 0 {
		return false, "not a pid"
	}
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false, "no such process"
	}
	if runtime.GOOS == "linux" {
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// pid (comm) S ...: the state follows the last ')'.
			s := string(data)
			if k := strings.LastIndexByte(s, ')'); k >= 0 && k+2 < len(s) {
				state := s[k+2]
				if state == 'Z' || state == 'X' {
					return false, "zombie"
				}
				return true, fmt.Sprintf("state %c: %s", state, abbrev(strings.TrimSpace(s), 120))
			}
		}
	}
	return true, "running"
}
