package repl

import (
	"bytes"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

var allStates = []workerState{workerStopped, workerStarting, workerReady, workerBusy, workerStopping, workerDead}

// TestStateTableIsTheDesignTable: the moves workerState.allows permits are exactly
// the rows of docs/design.md's table ("The supervisor: a worker's states"), so that
// neither can change without the other.
func TestStateTableIsTheDesignTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## The supervisor: a worker's states\n")
	if !ok {
		t.Fatal(`docs/design.md has no section "The supervisor: a worker's states"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	byName := map[string]workerState{}
	for _, s := range allStates {
		byName[s.String()] = s
	}
	names := regexp.MustCompile("`([a-z]+)`")
	states := func(cell string) []workerState {
		var out []workerState
		for _, m := range names.FindAllStringSubmatch(cell, -1) {
			s, ok := byName[m[1]]
			if !ok {
				t.Fatalf("the design table names a state %q that state.go does not have", m[1])
			}
			out = append(out, s)
		}
		return out
	}
	documented := map[[2]workerState]bool{}
	rows := 0
	for line := range strings.Lines(section) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // not a row of the table, or its header
		}
		rows++
		for _, from := range states(cells[1]) {
			for _, to := range states(cells[2]) {
				documented[[2]workerState{from, to}] = true
			}
		}
	}
	if rows < 5 {
		t.Fatalf("found %d rows of the state table in docs/design.md", rows)
	}
	for _, from := range allStates {
		for _, to := range allStates {
			if got, want := from.allows(to), documented[[2]workerState{from, to}]; got != want {
				t.Errorf("%s -> %s: allows says %v, docs/design.md says %v", from, to, got, want)
			}
		}
	}
}

// TestRefusedMoveIsNotApplied: a move the table does not allow leaves the state as
// it was, wakes nobody and is logged; an allowed one wakes whoever waits.
func TestRefusedMoveIsNotApplied(t *testing.T) {
	var logged bytes.Buffer
	l := newLifecycle(launch{}, sessionEnv{}, nil, nil, slog.New(slog.NewTextHandler(&logged, nil)))
	l.mu.Lock()
	defer l.mu.Unlock()
	waiting := l.changed
	if l.setState(workerBusy) {
		t.Fatal("stopped -> busy was applied")
	}
	if l.state != workerStopped {
		t.Fatalf("state after a refused move = %s, want stopped", l.state)
	}
	select {
	case <-waiting:
		t.Fatal("a refused move woke the waiters")
	default:
	}
	if !strings.Contains(logged.String(), "refused worker state change") || !strings.Contains(logged.String(), "to=busy") {
		t.Fatalf("the refused move was not logged: %q", logged.String())
	}
	if !l.setState(workerStarting) {
		t.Fatal("stopped -> starting was refused")
	}
	select {
	case <-waiting:
	default:
		t.Fatal("an applied move did not wake the waiters")
	}
}

// TestSettledWaitsWithoutTheLock: settled never returns a start or stop in progress,
// returns without the lifecycle's lock, and gives up when done closes.
func TestSettledWaitsWithoutTheLock(t *testing.T) {
	l := newLifecycle(launch{}, sessionEnv{}, nil, nil, slog.New(slog.DiscardHandler))
	l.mu.Lock()
	l.setState(workerStarting)
	l.mu.Unlock()

	gaveUp := make(chan struct{})
	close(gaveUp)
	if _, ok := l.settled(gaveUp); ok {
		t.Fatal("settled returned a worker while it was starting, though done had closed")
	}

	got := make(chan workerView, 1)
	go func() {
		w, _ := l.settled(nil)
		got <- w
	}()
	l.mu.Lock()
	l.setState(workerStopped) // the start failed
	l.mu.Unlock()
	var w workerView
	select {
	case w = <-got:
	case <-time.After(testwait.Bound(t, 10*time.Second)):
		t.Fatal("settled did not return after the start ended")
	}
	if w.state != workerStopped {
		t.Fatalf("settled returned %s, want stopped", w.state)
	}
	if !l.mu.TryLock() {
		t.Fatal("settled returned holding the lifecycle's lock")
	}
	l.mu.Unlock()
}
