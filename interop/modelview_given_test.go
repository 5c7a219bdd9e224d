package interop

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig must know every format an agent may pass on
	_ "image/jpeg"
	_ "image/png"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// A step is one tool call in a fake model's script.
type step struct {
	id     string         // names the call in tool-call ids, records and failures
	server string         // the MCP server's name in the agent's configuration
	tool   string         // the MCP tool's name as the server lists it
	args   map[string]any // its arguments
	// session adds the session_id the model read in python_health's result, when it
	// read one there, as a model that follows the server's instructions would.
	session bool
	// derive, when set, makes the arguments from what the model was given before; a
	// non-empty skip says why the step cannot run, and it is recorded as not run.
	derive func(given map[string]*given) (args map[string]any, skip string)
	// turn is the prompt the step answers: 0 the CLI's first, 1 the fake's later
	// prompt, with which a CLI continues the conversation in a new process
	// (`claude --continue`); the first turn ends where the later one's steps begin.
	turn int
}

// given is what an agent CLI gave its model for one tool call, as it reached the model
// API, and the call it answered.
type given struct {
	Step    string
	Tool    string         // the tool the model called, as the agent names it
	Args    map[string]any // the arguments the model sent
	Skipped string         // why the step never ran; nothing else is set then
	// IsError is the API's error flag on the result; nil where the API has none
	// (OpenAI Responses' function_call_output carries no flag).
	IsError *bool
	Texts   []string // the result's text blocks in order, less the envelope
	// Envelope is text the CLI itself put around the tool's result: Codex's
	// "Wall time: ... seconds\nOutput:" and Claude Code's "[Image: source: PATH]" notes.
	// repl-mcp cannot change it, so the budgets of the points leave it out.
	Envelope []string
	Images   []givenImage
	Raw      json.RawMessage // the result's content exactly as the CLI sent it
	// Background is Claude Code's notice that it moved the call to the background
	// (CLAUDE_AUTO_BACKGROUND_TASKS); Texts are then the result its task
	// notification delivered later.
	Background string
}

// givenImage is one image block, decoded far enough to know it is an image.
type givenImage struct {
	MediaType     string
	Bytes         int
	Format        string // what image.DecodeConfig recognised; empty when it could not
	Width, Height int
	DecodeErr     string
}

// Text is the text blocks joined by newlines (the join is not counted by Chars).
func (g *given) Text() string { return strings.Join(g.Texts, "\n") }

// Chars counts the characters (code points) of the text blocks.
func (g *given) Chars() int {
	n := 0
	for _, s := range g.Texts {
		n += utf8.RuneCountInString(s)
	}
	return n
}

// Lines splits the text into lines, also at the two characters `\n`: a result the CLI
// passes on as JSON keeps its newlines escaped inside strings, and a model reads
// those as lines too.
func (g *given) Lines() []string {
	return strings.Split(strings.ReplaceAll(g.Text(), `\n`, "\n"), "\n")
}

// addImage decodes one image's base64 data.
func (g *given) addImage(mediaType, data string) {
	img := givenImage{MediaType: mediaType}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		img.DecodeErr = "base64: " + err.Error()
	} else {
		img.Bytes = len(raw)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(raw))
		if err != nil {
			img.DecodeErr = err.Error()
		} else {
			img.Format, img.Width, img.Height = format, cfg.Width, cfg.Height
		}
	}
	g.Images = append(g.Images, img)
}

// summary is one line for logs: what the model was given and how much of it.
func (g *given) summary() string {
	if g.Skipped != "" {
		return fmt.Sprintf("%s: not run: %s", g.Step, g.Skipped)
	}
	flag := "no error flag"
	if g.IsError != nil {
		flag = fmt.Sprintf("is_error=%v", *g.IsError)
	}
	var imgs []string
	for _, im := range g.Images {
		if im.DecodeErr != "" {
			imgs = append(imgs, fmt.Sprintf("%s %d bytes (undecodable: %s)", im.MediaType, im.Bytes, im.DecodeErr))
		} else {
			imgs = append(imgs, fmt.Sprintf("%s %dx%d %d bytes", im.MediaType, im.Width, im.Height, im.Bytes))
		}
	}
	env := 0
	for _, e := range g.Envelope {
		env += utf8.RuneCountInString(e)
	}
	via := ""
	if g.Background != "" {
		via = ", delivered by a background task"
	}
	return fmt.Sprintf("%s (%s): %d characters of text in %d blocks%s, %s, images %v, %d characters of the CLI's own envelope; text:\n%s",
		g.Step, g.Tool, g.Chars(), len(g.Texts), via, flag, imgs, env, clip(g.Text(), 1500))
}

// clip keeps short texts whole and shows the head and tail of long ones.
func clip(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return fmt.Sprintf("%s\n[... %d characters not shown ...]\n%s", string(r[:max/2]), len(r)-max, string(r[len(r)-max/2:]))
}

// sessionIDPattern finds a session id where a model would: after the word session
// (session_id, session id) in python_health's result, in whatever form the result
// takes (JSON or text).
var sessionIDPattern = regexp.MustCompile(`(?i)session(?:[ _-]?id)?\W{0,6}(` + uuidPattern + `)`)

// artifactIDPattern finds the id a result gives for an artifact: the first UUID after
// the word artifact, on the same line.
var artifactIDPattern = regexp.MustCompile(`(?i)artifact[^\n]{0,80}?(` + uuidPattern + `)`)

// stepIDPattern keeps step ids valid inside every API's tool-call ids.
var stepIDPattern = regexp.MustCompile(`^[a-z0-9_]+$`)

const uuidPattern = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`

// fakeModel is the script and the records shared by both fake model APIs: which tool
// call comes next, given the results a request carries, and what the model was given
// for each. Its methods are safe for the HTTP server's goroutines.
type fakeModel struct {
	agent  string // for messages
	prompt string // the CLI's prompt: marks the scripted conversation
	steps  []step

	mu         sync.Mutex
	given      map[string]*given // by step id
	order      []string          // step ids, in the order their results first arrived
	unexpected []string          // requests the fake did not expect, each saying why
	problems   []string          // scripted requests whose content broke the script
	handled    []string          // other requests it answered (token counts, model lists)
	requests   int               // scripted requests served
	finished   bool              // the final answer was sent
	keptAlive  int               // turns spent waiting for a background task
	// later is the prompt of a continued conversation's second turn ("" for none),
	// and turn the turn the current request is in (step.turn).
	later string
	turn  int
	// watch are strings to look for in every request body; watched counts the
	// requests that held each (what the CLI showed its model, or not).
	watch   []string
	watched map[string]int
}

// observe counts the watched strings a request body holds.
func (m *fakeModel) observe(body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.watch {
		if bytes.Contains(body, []byte(w)) {
			m.watched[w]++
		}
	}
}

func newFakeModel(agent, prompt string, steps []step) *fakeModel {
	ids := map[string]bool{}
	for _, st := range steps {
		if ids[st.id] || !stepIDPattern.MatchString(st.id) {
			panic("step ids must be unique and [a-z0-9_]+: " + st.id)
		}
		ids[st.id] = true
	}
	return &fakeModel{agent: agent, prompt: prompt, steps: steps, given: map[string]*given{}, watched: map[string]int{}}
}

func (m *fakeModel) stepByID(id string) *step {
	for i := range m.steps {
		if m.steps[i].id == id {
			return &m.steps[i]
		}
	}
	return nil
}

// record keeps what the model was given for a step the first time a request carries
// it: that request is the one in which the model reads it. Later copies are the
// conversation's history.
func (m *fakeModel) record(g *given) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.given[g.Step]; ok {
		return
	}
	m.given[g.Step] = g
	m.order = append(m.order, g.Step)
}

// next is the step to call once the steps in done have their results, with its
// arguments; nil when the script is over. Steps that cannot run are recorded as not
// run and passed over.
func (m *fakeModel) next(done map[string]bool) (*step, map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.steps {
		st := &m.steps[i]
		if done[st.id] {
			continue
		}
		if st.turn > m.turn {
			return nil, nil // the turn is over: its final answer, the script goes on later
		}
		if g, ok := m.given[st.id]; ok && g.Skipped != "" {
			continue
		}
		args := map[string]any{}
		for k, v := range st.args {
			args[k] = v
		}
		if st.derive != nil {
			derived, skip := st.derive(m.given)
			if skip != "" {
				m.given[st.id] = &given{Step: st.id, Tool: st.tool, Skipped: skip}
				m.order = append(m.order, st.id)
				continue
			}
			for k, v := range derived {
				args[k] = v
			}
		}
		if st.session {
			if h, ok := m.given["health"]; ok {
				if sm := sessionIDPattern.FindStringSubmatch(h.Text()); sm != nil {
					args["session_id"] = sm[1]
				}
			}
		}
		return st, args
	}
	m.finished = true
	return nil, nil
}

// enterTurn says which turn of the conversation the current request is in.
func (m *fakeModel) enterTurn(turn int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turn = turn
}

// countRequest counts a scripted request and returns how many there were, this one
// included.
func (m *fakeModel) countRequest() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	return m.requests
}

// countKeepAlive counts a turn spent waiting for a background task.
func (m *fakeModel) countKeepAlive() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keptAlive++
	return m.keptAlive
}

func (m *fakeModel) unexpectedf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.unexpected) < 64 {
		m.unexpected = append(m.unexpected, fmt.Sprintf(format, args...))
	}
}

func (m *fakeModel) problemf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.problems) < 64 {
		m.problems = append(m.problems, fmt.Sprintf(format, args...))
	}
}

func (m *fakeModel) handledf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.handled) < 64 {
		m.handled = append(m.handled, fmt.Sprintf(format, args...))
	}
}

// records is a copy of everything recorded, for the checks once the CLI has exited.
type records struct {
	given      map[string]*given
	order      []string
	unexpected []string
	problems   []string
	handled    []string
	requests   int
	finished   bool
	watched    map[string]int
}

func (m *fakeModel) records() records {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := records{given: map[string]*given{}, requests: m.requests, finished: m.finished, watched: map[string]int{}}
	for k, v := range m.watched {
		r.watched[k] = v
	}
	for k, v := range m.given {
		r.given[k] = v
	}
	r.order = append(r.order, m.order...)
	r.unexpected = append(r.unexpected, m.unexpected...)
	r.problems = append(r.problems, m.problems...)
	r.handled = append(r.handled, m.handled...)
	return r
}

// dump is the records in the order they arrived, for REPL_MCP_MODELVIEW_DUMP.
func (r records) dump() map[string]any {
	var given []*given
	for _, id := range r.order {
		given = append(given, r.given[id])
	}
	return map[string]any{"given": given, "unexpected": r.unexpected, "problems": r.problems, "handled": r.handled}
}

// missing lists the script's steps with no record at all.
func (r records) missing(steps []step) []string {
	var ids []string
	for _, st := range steps {
		if _, ok := r.given[st.id]; !ok {
			ids = append(ids, st.id)
		}
	}
	sort.Strings(ids)
	return ids
}
