package server

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/iota-uz/repl-mcp/repl"
	"github.com/iota-uz/repl-mcp/server/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Live progress of execute_python and python_execute_file, and of a python_run that
// waits (docs/contract.md §3.1, §3.5): a call whose _meta carries a progressToken
// gets notifications/progress while its cell runs (or, for python_run, while it
// waits), on the first output and then at most once a second, each with the last
// output line as its message. None is ever sent after the call's reply.

const (
	progressInterval     = time.Second
	progressMessageRunes = 200
)

// callRequestKey carries a tools/call request to its typed handler, which go-sdk's
// request (the session to notify, the progress token) does not otherwise reach.
type callRequestKey struct{}

func withCallRequest(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	return context.WithValue(ctx, callRequestKey{}, req)
}

// followProgress returns the watch that reports a run's output to the client when
// the call in ctx asked for progress (nil when it did not), and the function that
// ends the reports: the handler calls it before it returns, and it waits for a
// notification being written, so that every notification precedes the reply. ctx
// must be the handler's own: over Streamable HTTP it is what ties a notification to
// its request's stream.
func followProgress(ctx context.Context) (watch *repl.OutputWatch, stop func()) {
	call, _ := ctx.Value(callRequestKey{}).(*mcp.CallToolRequest)
	if call == nil || call.Session == nil || call.Params == nil {
		return nil, func() {}
	}
	token := call.Params.GetProgressToken()
	if !echoableToken(token) {
		return nil, func() {}
	}
	watch = repl.NewOutputWatch()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { reportProgress(ctx, call.Session, token, watch, done) })
	return watch, func() {
		close(done)
		wg.Wait()
	}
}

// echoableToken reports a progress token the specification allows, a string or
// an integer, as encoding/json decodes it. An integer beyond 2^53 has lost digits
// here: where the transport owns the bytes it arrives as a stand-in string and
// leaves with every digit (transport/wireids.go); anywhere else it gets no notifications
// rather than ones for another token.
func echoableToken(token any) bool {
	switch t := token.(type) {
	case string:
		return true
	case float64:
		return t == math.Trunc(t) && math.Abs(t) <= transport.MaxExactFloat
	}
	return false
}

// reportProgress sends a notification for the first output and then at most one per
// progressInterval, until done. Progress is the run's output in bytes, which only
// grows; a pulse that brings nothing new sends nothing.
func reportProgress(ctx context.Context, session *mcp.ServerSession, token any, watch *repl.OutputWatch, done <-chan struct{}) {
	var last time.Time
	var sent int64
	for {
		select {
		case <-done:
			return
		case <-watch.Changed():
		}
		if wait := time.Until(last.Add(progressInterval)); !last.IsZero() && wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-done:
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		select {
		case <-done:
			return // the reply carries the output now
		default:
		}
		line, total := watch.Latest(progressMessageRunes)
		if total <= sent {
			continue
		}
		// A failed notification (the client went away, the request's stream is
		// closed) changes nothing for the run; the reply says what happened.
		_ = session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Message:       line,
			Progress:      float64(total),
		})
		sent, last = total, time.Now()
	}
}
