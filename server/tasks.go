package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/server/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Long cells as MCP tasks (docs/contract.md §2.8), the extension
// io.modelcontextprotocol/tasks of MCP 2026-07-28 (SEP-2663,
// https://github.com/modelcontextprotocol/ext-tasks/blob/main/specification/2026-07-28/tasks.md).
// A tools/call of execute_python or
// python_execute_file whose request declares the extension, and whose cell outlives
// the threshold, is answered with a task whose id is the run's: the run goes on as
// after a yield (docs/contract.md §5.6), and the client polls tasks/get for its
// result. go-sdk knows nothing of tasks: the tools/call answer is swapped in by a
// middleware (taskAnswers), and tasks/get, tasks/cancel and tasks/update are served
// by the transports themselves (transport/stdio.go, transport/http_tasks.go) through
// serveTask (taskRequests, their transport.Tasks).

// tasksExtension names the extension, in capabilities and per-request _meta.
const tasksExtension = "io.modelcontextprotocol/tasks"

// Task defaults and bounds.
const (
	// DefaultTaskAfter is the threshold: a cell still running this long after its
	// call arrived becomes a task; one that ends sooner answers as usual.
	DefaultTaskAfter = 10 * time.Second
	// DefaultTaskPoll is the pollIntervalMs a task suggests.
	DefaultTaskPoll = time.Second
	// taskKeep is how long a task is kept once its run has ended: its ttlMs then
	// says the same, counted from its creation.
	taskKeep = 10 * time.Minute
	// maxEndedTasks bounds the ended tasks kept (each holds its run's result); past
	// it the one that ended first goes, even before its ttlMs.
	maxEndedTasks = 256
	// statusMessageRunes bounds a working task's statusMessage.
	statusMessageRunes = 200
)

// The statuses of a task as the extension names them.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// declaresTasks reports a request whose per-request client capabilities
// (_meta["io.modelcontextprotocol/clientCapabilities"].extensions) name the tasks
// extension: only such a request may be answered with a task.
func declaresTasks(meta map[string]any) bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	_, ok := exts[tasksExtension]
	return ok
}

// taskCall reports whether the tools/call in ctx may become a task: a call of a
// tool whose cell may outlive a client's deadline (taskTool), on a server that
// answers with tasks, whose request declared the extension.
func (s *Server) taskCall(ctx context.Context) bool {
	call, _ := ctx.Value(callRequestKey{}).(*mcp.CallToolRequest)
	return s.tasks != nil && s.tasks.after > 0 && call != nil && call.Params != nil && taskTool(call.Params.Name) && declaresTasks(call.Params.Meta)
}

// taskTool reports a tool whose call may become a task: one that runs a cell and
// waits for it. python_start answers at once, python_run waits at most 45 s.
func taskTool(name string) bool { return name == "execute_python" || name == "python_execute_file" }

// taskTable holds the tasks of one server: the runs whose calls were answered with a
// task, while they run and for taskKeep after.
type taskTable struct {
	after, poll time.Duration

	mu    sync.Mutex
	tasks map[string]*task
}

func newTaskTable(after, poll time.Duration) *taskTable {
	return &taskTable{after: after, poll: poll, tasks: map[string]*task{}}
}

// task is one run seen as an MCP task.
type task struct {
	run     repl.Handle
	sess    *repl.Session
	form    form   // of the client that made it
	client  string // which client that is (clientKey)
	created time.Time

	mu          sync.Mutex
	cancelAsked bool // tasks/cancel came
	// delivered is how much of the run's output the task's client has been given,
	// by python_run answers about the run and by the task's result: neither gives
	// it again unless asked by offset (docs/contract.md §2.8).
	delivered [2]int64
	final     json.RawMessage // the completed task's result, frozen once made
	status    string          // the terminal status, once final is made
	message   string          // its statusMessage
}

// add makes the task of a run that left its call, once it is in the table (so a
// tasks/get for it resolves before the call's answer goes out).
func (tt *taskTable) add(sess *repl.Session, run repl.Handle, f form, client string) *task {
	t := &task{run: run, sess: sess, form: f, client: client, created: time.Now()}
	run.MarkTask()
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.sweep()
	tt.tasks[run.ID()] = t
	return t
}

// find is the task of run id, nil when there is none (or no longer).
func (tt *taskTable) find(id string) *task {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.sweep()
	return tt.tasks[id]
}

// sweep drops the tasks whose run ended more than taskKeep ago, then the ended
// tasks beyond maxEndedTasks, those that ended first; tt.mu is held.
func (tt *taskTable) sweep() {
	now := time.Now()
	var ended []*task
	for id, t := range tt.tasks {
		switch at := endedAt(t); {
		case at.IsZero():
		case now.Sub(at) > taskKeep:
			delete(tt.tasks, id)
		default:
			ended = append(ended, t)
		}
	}
	if len(ended) > maxEndedTasks {
		slices.SortFunc(ended, func(a, b *task) int { return endedAt(a).Compare(endedAt(b)) })
		for _, t := range ended[:len(ended)-maxEndedTasks] {
			delete(tt.tasks, t.run.ID())
		}
	}
}

// endedAt is when t's run ended, zero while it runs.
func endedAt(t *task) time.Time {
	_, at := t.run.Result()
	return at
}

// taskState is a task as the extension writes it: CreateTaskResult (resultType
// "task") and GetTaskResult (resultType "complete", with result or error once it
// has ended).
type taskState struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"` // null while it runs: it is never discarded then
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *jsonrpc.Error  `json:"error,omitempty"`
}

// createdTask is the answer of a tools/call that became a task. It is an mcp.Result
// that sets no resultType of go-sdk's: its own is "task".
type createdTask struct {
	mcp.ResultBase
	taskState
}

// timestamp writes t as the extension's ISO 8601 timestamps, in UTC.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// state is the task now. ctx is the tasks/get request's: a text-form result whose
// text cuts what no artifact holds keeps the complete text as an artifact first.
// The first state that finds the run ended freezes its result, so every later one
// says the same.
func (tt *taskTable) state(ctx context.Context, t *task) taskState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := taskState{ResultType: "complete", TaskID: t.run.ID(), CreatedAt: timestamp(t.created),
		LastUpdatedAt: timestamp(t.created), PollIntervalMs: tt.poll.Milliseconds()}
	res, ended := t.run.Result()
	if res == nil {
		line, elapsed := t.run.Latest(statusMessageRunes)
		st.Status, st.StatusMessage = taskWorking, workingMessage(line, elapsed)
		return st
	}
	if t.status == "" {
		t.finish(ctx, res)
	}
	ttl := ended.Sub(t.created).Milliseconds() + taskKeep.Milliseconds()
	st.Status, st.StatusMessage, st.LastUpdatedAt, st.TTLMs = t.status, t.message, timestamp(ended), &ttl
	switch t.status {
	case taskCompleted:
		st.Result = t.final
	case taskFailed:
		st.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: t.message}
	}
	return st
}

// workingMessage is a working task's statusMessage: how long its run has run, and
// its last line of output.
func workingMessage(line string, elapsed time.Duration) string {
	msg := fmt.Sprintf("running for %s", waitedFor(elapsed))
	if line != "" {
		msg += ": " + line
	}
	return msg
}

// waitedFor is d in whole seconds, as a person reads a wait.
func waitedFor(d time.Duration) string {
	return fmt.Sprintf("%d s", int64(d.Round(time.Second)/time.Second))
}

// finish freezes the ended run's result as the task's: cancelled when tasks/cancel
// stopped it, else completed with the CallToolResult its call would have returned,
// less the output python_run already gave (delivered); t.mu is held.
func (t *task) finish(ctx context.Context, res *repl.Result) {
	if t.cancelAsked && !res.Success {
		t.status, t.message = taskCancelled, firstLineOf(res.Error)
		t.delivered = resultEnds(res)
		return
	}
	value := executed(res)
	if t.delivered != ([2]int64{}) {
		from, err := res.From(repl.Offsets{Stdout: &t.delivered[0], Stderr: &t.delivered[1]})
		if err == nil {
			value = execution{Result: from, polled: true, skipped: true, laid: new(layout)}
		}
	}
	var kept *keptText
	if t.form == formText {
		kept = keepText(ctx, t.sess, value)
	}
	final, err := json.Marshal(wireResult(present(t.form, value, kept)))
	if err != nil {
		t.status, t.message = taskFailed, "the run's result could not be encoded: "+err.Error()
		return
	}
	t.status, t.final = taskCompleted, final
	t.delivered = resultEnds(res)
}

// firstLineOf is an error's first line, for a statusMessage.
func firstLineOf(msg *string) string {
	if msg == nil {
		return ""
	}
	line, _, _ := strings.Cut(*msg, "\n")
	return line
}

// resultEnds are where a result's streams end, as python_run's offsets count.
func resultEnds(res *repl.Result) [2]int64 {
	var zero int64
	from, err := res.From(repl.Offsets{Stdout: &zero, Stderr: &zero})
	if err != nil || from.StdoutEnd == nil || from.StderrEnd == nil {
		return [2]int64{}
	}
	return [2]int64{*from.StdoutEnd, *from.StderrEnd}
}

// created is the answer of the call whose run became task t.
func (tt *taskTable) created(t *task) *createdTask {
	line, elapsed := t.run.Latest(statusMessageRunes)
	return &createdTask{taskState: taskState{
		ResultType: "task", TaskID: t.run.ID(), Status: taskWorking, StatusMessage: workingMessage(line, elapsed),
		CreatedAt: timestamp(t.created), LastUpdatedAt: timestamp(t.created), PollIntervalMs: tt.poll.Milliseconds(),
	}}
}

// taskSlotKey carries, to a tools/call handler, where it leaves the task its call
// became (taskAnswers).
type taskSlotKey struct{}

type taskSlot struct{ task *task }

// taskAnswers answers a tools/call whose handler made a task with the task
// (CreateTaskResult) instead of the CallToolResult it returned. go-sdk's tool
// handlers can return only a CallToolResult, so the handler leaves the task in a
// slot of its context.
func (s *Server) taskAnswers(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		slot := &taskSlot{}
		res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
		if err == nil && slot.task != nil {
			return s.tasks.created(slot.task), nil
		}
		return res, err
	}
}

// advertiseTasks adds the extension to server/discover's capabilities, where a
// 2026-07-28 client reads it, when the server answers with tasks at all. initialize
// does not carry it: the extension is negotiated per request under 2026-07-28.
func (s *Server) advertiseTasks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if d, ok := res.(*mcp.DiscoverResult); ok && err == nil && s.tasks.after > 0 {
			caps := &mcp.ServerCapabilities{}
			if d.Capabilities != nil {
				c := *d.Capabilities
				caps = &c
			}
			exts := map[string]any{tasksExtension: map[string]any{}}
			for k, v := range caps.Extensions {
				exts[k] = v
			}
			caps.Extensions = exts
			d.Capabilities = caps
		}
		return res, err
	}
}

// executedOrTask is an execution's value: its result; the run it became after a
// yield; or, for a call that declared tasks, the task it became, left in the call's
// slot (the value is then never shown).
func (s *Server) executedOrTask(ctx context.Context, sess *repl.Session, res *repl.Result, snap *repl.Snapshot, yield time.Duration) any {
	slot, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
	if snap == nil || slot == nil || !s.taskCall(ctx) || !snap.Handle().Valid() {
		return executedOrYielded(res, snap, yield)
	}
	call, _ := ctx.Value(callRequestKey{}).(*mcp.CallToolRequest)
	slot.task = s.tasks.add(sess, snap.Handle(), s.formFor(call), clientKey(call))
	return runningRun{Snapshot: snap, yielded: true, wait: yield}
}

// msgEarlierOutput is the footer item of an answer whose streams start where an
// earlier answer about its run stopped (docs/contract.md §2.8).
const msgEarlierOutput = "earlier output already delivered (stdout_offset 0 and stderr_offset 0 read it again)"

// clientKey names the client of a request, so that a task's marks of what its
// client was given apply to that client alone: over stdio there is one; over HTTP
// it is the MCP session, or for a sessionless request the clientInfo it sends.
func clientKey(call *mcp.CallToolRequest) string {
	if call == nil || call.Extra == nil || call.Extra.Header == nil {
		return "stdio"
	}
	if id := call.Extra.Header.Get(transport.SessionIDHeader); id != "" {
		return "session " + id
	}
	if info := call.Params.Meta[mcp.MetaKeyClientInfo]; info != nil {
		b, _ := json.Marshal(info)
		return "client " + string(b)
	}
	return "anonymous"
}

// readRun is python_run's lookup of a run (sess.Lookup), knowing tasks: for a run
// that is a task of the calling client, an answer without offsets starts where the
// earlier answers about it and the task's result stopped (skipped then says so),
// and every answer moves that mark on, so that no output reaches the client twice
// unless it asks by offset.
func (s *Server) readRun(ctx context.Context, sess *repl.Session, runID string, offs repl.Offsets) (snap *repl.Snapshot, res *repl.Result, skipped bool, err error) {
	if snap, res, err = sess.Lookup(runID, offs); err != nil {
		return nil, nil, false, err
	}
	id := runID
	switch {
	case snap != nil:
		id = snap.RunID
	case res != nil:
		id = res.RunID
	}
	t := s.tasks.find(id)
	call, _ := ctx.Value(callRequestKey{}).(*mcp.CallToolRequest)
	if t == nil || t.client != clientKey(call) {
		return snap, res, false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if offs.Stdout == nil && offs.Stderr == nil && t.delivered != ([2]int64{}) {
		from := t.delivered
		offs.Stdout, offs.Stderr = &from[0], &from[1]
		if snap, res, err = sess.Lookup(id, offs); err != nil {
			return nil, nil, false, err
		}
		skipped = true
	}
	var ends [2]int64
	switch {
	case snap != nil:
		ends = [2]int64{snap.StdoutEnd, snap.StderrEnd}
	case res.StdoutEnd != nil && res.StderrEnd != nil:
		ends = [2]int64{*res.StdoutEnd, *res.StderrEnd}
	default:
		ends = resultEnds(res)
	}
	t.delivered = [2]int64{max(t.delivered[0], ends[0]), max(t.delivered[1], ends[1])}
	return snap, res, skipped, nil
}

// The methods of the extension, served by the transports (serveTask).
const (
	methodTasksGet    = "tasks/get"
	methodTasksCancel = "tasks/cancel"
	methodTasksUpdate = "tasks/update"
)

// ownsRequest reports a request the transports answer through serveTask rather
// than hand to go-sdk: a method of the extension, and a subscriptions/listen that
// asks for task notifications without declaring the extension, which the extension
// refuses (go-sdk would drop the taskIds it does not know and acknowledge). No task
// notifications are sent on a subscriptions/listen stream (the extension makes them
// optional).
func ownsRequest(method string, params json.RawMessage) bool {
	switch method {
	case methodTasksGet, methodTasksCancel, methodTasksUpdate:
		return true
	case transport.MethodSubscriptionsListen:
		var p struct {
			Meta          map[string]any `json:"_meta"`
			Notifications struct {
				TaskIDs json.RawMessage `json:"taskIds"`
			} `json:"notifications"`
		}
		return json.Unmarshal(params, &p) == nil && len(p.Notifications.TaskIDs) > 0 && !declaresTasks(p.Meta)
	}
	return false
}

// errMissingTasks is the -32021 error of a request that needed the extension
// declared in its _meta.
func errMissingTasks() *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability: declare the " +
		tasksExtension + " extension in _meta[\"" + mcp.MetaKeyClientCapabilities + "\"].extensions", Data: data}
}

// Why a task request is refused.
var (
	errTaskNotFound = fmt.Errorf("Failed to retrieve task: Task not found; a task is kept %d minutes after its run "+
		"ends (read an older run with python_run and its run_id, the task's id)", int(taskKeep.Minutes()))
	errTaskParams = errors.New("Invalid params: pass taskId, the id a tools/call answered with resultType \"task\"")
)

// serveTask answers one request ownsRequest owns: its result, or the JSON-RPC
// error to answer with. ctx is the transport's, for a result's artifact.
func (s *Server) serveTask(ctx context.Context, method string, params json.RawMessage) (any, *jsonrpc.Error) {
	if method == transport.MethodSubscriptionsListen {
		return nil, errMissingTasks()
	}
	var p struct {
		Meta           map[string]any  `json:"_meta"`
		TaskID         *string         `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.TaskID == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errTaskParams.Error()}
	}
	if !declaresTasks(p.Meta) {
		return nil, errMissingTasks()
	}
	t := s.tasks.find(*p.TaskID)
	if t == nil {
		// A task of an earlier server: its run's record says what became of it.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errTaskNotFound.Error() + s.repl.EarlierRun(*p.TaskID)}
	}
	ack := map[string]string{"resultType": "complete"}
	switch method {
	case methodTasksGet:
		return s.tasks.state(ctx, t), nil
	case methodTasksCancel:
		// As python_cancel: the run is interrupted, its session keeps going; a run
		// that has ended is left as it is, and its task keeps its result.
		t.mu.Lock()
		if _, err := t.sess.Cancel(t.run.ID()); err == nil {
			t.cancelAsked = true
		}
		t.mu.Unlock()
		return ack, nil
	default: // tasks/update: no task of ours ever asks for input, so there is nothing to answer
		if len(p.InputResponses) > 0 && string(p.InputResponses) != "null" {
			var responses map[string]json.RawMessage
			if json.Unmarshal(p.InputResponses, &responses) != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: inputResponses must be an object"}
			}
		}
		return ack, nil
	}
}

// taskRequests are the requests of the extension as the transports answer them
// (transport.Tasks): ownsRequest picks them, serveTask answers.
type taskRequests struct{ s *Server }

func (taskRequests) Owns(method string, params json.RawMessage) bool {
	return ownsRequest(method, params)
}

func (r taskRequests) Serve(ctx context.Context, method string, params json.RawMessage) (any, *jsonrpc.Error) {
	return r.s.serveTask(ctx, method, params)
}
