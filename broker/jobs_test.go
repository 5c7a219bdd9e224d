package broker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/broker/registry"
	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// TestStalledRegistryLoadKeepsItsOneJob: a load stalled on the file system is one
// job; each caller waits at most 5 s from its start, and a caller arriving later
// fails at once without starting another.
func TestStalledRegistryLoadKeepsItsOneJob(t *testing.T) {
	t.Parallel()
	tb := newTestBroker(t, map[string]any{})
	release := make(chan struct{})
	var loads atomic.Int32
	tb.load = func(o registry.Options) (*registry.Registry, error) {
		loads.Add(1)
		<-release
		return registry.Load(o)
	}
	defer close(release)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = tb.reload() })
	}
	wg.Wait()
	waited := time.Since(start)
	for _, err := range errs {
		wantErr(t, err, msgRegistryStalled)
	}
	if waited < registryJobBudget || waited > registryJobBudget+2*time.Second {
		t.Fatalf("the callers gave up after %v, want %v", waited, registryJobBudget)
	}
	start = time.Now()
	tb.Refresh()
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("a refresh after the budget waited %v, want at once", waited)
	}
	if h := tb.Health(); h.ConfigurationError == nil || *h.ConfigurationError != msgRegistryStalled {
		t.Fatalf("health = %+v", h)
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads started, want the one stalled job", n)
	}
}

// slowListings delays every tools/list request to h by d and counts them.
func slowListings(h http.Handler, d time.Duration, n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"tools/list"`)) {
			n.Add(1)
			time.Sleep(d)
		}
		h.ServeHTTP(w, r)
	})
}

// TestConcurrentListingsShareOneJob: callers that find the catalogue stale at once
// send one tools/list between them.
func TestConcurrentListingsShareOneJob(t *testing.T) {
	var lists atomic.Int32
	srv := startLoopback(t, slowListings(echoHandler(), 300*time.Millisecond, &lists))
	tb := newTestBroker(t, map[string]any{"web": map[string]any{"type": "http", "url": srv.URL}})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			l, err := tb.ListTools(t.Context(), "web", DefaultListTimeout)
			if err == nil && (len(l.Tools) != 1 || !strings.Contains(string(l.Tools[0]), `"echo"`)) {
				err = errors.New("wrong catalogue: " + string(l.Tools[0]))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := lists.Load(); n != 1 {
		t.Fatalf("%d tools/list requests, want 1 shared by the 8 callers", n)
	}
}

// TestAbandonedListingIsRetriedByTheOthers: when the caller that started a shared
// listing gives up, a caller still waiting lists again under its own deadline
// instead of failing with the other's cancellation.
func TestAbandonedListingIsRetriedByTheOthers(t *testing.T) {
	var lists atomic.Int32
	srv := startLoopback(t, slowListings(echoHandler(), 500*time.Millisecond, &lists))
	tb := newTestBroker(t, map[string]any{"web": map[string]any{"type": "http", "url": srv.URL}})
	if _, err := tb.call("web", "echo", map[string]any{"text": "connect"}); err != nil {
		t.Fatal(err)
	}
	tb.refresh() // the catalogue is gone, the connection stays
	lists.Store(0)
	first, cancel := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() {
		_, err := tb.ListTools(first, "web", DefaultListTimeout)
		firstErr <- err
	}()
	testwait.Until(t, 20*time.Second, "the shared listing to start", func() bool { return lists.Load() == 1 })
	secondErr := make(chan error, 1)
	go func() {
		_, err := tb.ListTools(t.Context(), "web", DefaultListTimeout)
		secondErr <- err
	}()
	// Holding its request slot, the second is microseconds from joining the first's
	// listing, which has 500 ms to go. (Had it not joined, it would list on its own
	// and the counts below would be the same.)
	testwait.Until(t, 20*time.Second, "two request slots to be taken", func() bool { return len(tb.sem) == 2 })
	cancel()
	wantErr(t, <-firstErr, msgCancelledBeforeDispatch)
	if err := <-secondErr; err != nil {
		t.Fatalf("the caller still waiting failed with the other's cancellation: %v", err)
	}
	if n := lists.Load(); n != 2 {
		t.Fatalf("%d tools/list requests, want 2 (the abandoned one and the retry)", n)
	}
	if h := tb.Health(); h.ConnectedTransports != 1 {
		t.Fatal("the abandoned listing dropped the shared connection")
	}
}
