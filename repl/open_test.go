package repl

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// TestProbeThatHangsAfterValidOutputIsKilled: a fake interpreter that prints a valid
// self-description and then hangs is not trusted; its whole group is killed.
func TestProbeThatHangsAfterValidOutputIsKilled(t *testing.T) {
	m := newTestManager(t, realPython(t))
	m.SetProbeTimeout(time.Second)
	pidFile := filepath.Join(t.TempDir(), "pid")
	fake := fakePython(t, `echo $$ > `+pidFile+`
echo '{"version":"3.12.0","executable":"/x","major":3,"minor":12}'
sleep 60 &
wait`)
	start := time.Now()
	_, err := m.Open(t.Context(), OpenRequest{Name: "hang", Project: t.TempDir(), Python: fake})
	if err == nil || !strings.Contains(err.Error(), msgProbeTimeout) {
		t.Fatalf("err = %v, want %q", err, msgProbeTimeout)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("probe took %v", d)
	}
	data, _ := os.ReadFile(pidFile)
	pid := strings.TrimSpace(string(data))
	testwait.Until(t, 10*time.Second, "the hung probe to be killed", func() bool { return !processAlive(atoi(t, pid)) })
	if n := len(m.List()); n != 1 {
		t.Fatalf("%d sessions published, want only the default", n)
	}
}

func TestOpenCancelledPublishesNothing(t *testing.T) {
	m := newTestManager(t, realPython(t))
	m.SetProbeTimeout(time.Hour) // only the cancel ends this probe
	started := t.TempDir()
	fake := fakePython(t, `: > `+started+`/$$; exec sleep 3600`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		_, err := m.Open(ctx, OpenRequest{Name: "c", Project: t.TempDir(), Python: fake})
		ended <- err
	}()
	// Cancel once the probe runs: the open is then surely in progress.
	testwait.Until(t, time.Minute, "the probe to start", func() bool { return probesStarted(started) == 1 })
	cancel()
	if err := <-ended; err == nil || !strings.Contains(err.Error(), msgOpenCancelled) {
		t.Fatalf("err = %v", err)
	}
	if n := len(m.List()); n != 1 {
		t.Fatalf("%d sessions published", n)
	}
}

// TestOpeningCapacity: maxOpening opens in progress (each with its probe running, held
// until the test cancels them, whatever the machine's load) make the next one fail at
// once with msgOpeningFull.
func TestOpeningCapacity(t *testing.T) {
	m := newTestManager(t, realPython(t))
	m.SetProbeTimeout(time.Hour) // only the cancel ends these probes
	started := t.TempDir()
	fake := fakePython(t, `: > `+started+`/$$; exec sleep 3600`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ended := make(chan error, maxOpening)
	for range maxOpening {
		go func() {
			_, err := m.Open(ctx, OpenRequest{Name: "slow", Project: t.TempDir(), Python: fake})
			ended <- err
		}()
	}
	testwait.Until(t, time.Minute, "every opening's probe to run", func() bool {
		select {
		case err := <-ended:
			t.Fatalf("an open ended before it was cancelled: %v", err)
		default:
		}
		return probesStarted(started) == maxOpening
	})
	_, err := m.Open(t.Context(), OpenRequest{Name: "fifth", Project: t.TempDir(), Python: realPython(t)})
	if err == nil || !strings.Contains(err.Error(), msgOpeningFull) {
		t.Fatalf("err = %v", err)
	}
	cancel()
	for range maxOpening {
		if err := <-ended; err == nil || !strings.Contains(err.Error(), msgOpenCancelled) {
			t.Fatalf("a held open ended with %v, want %q", err, msgOpenCancelled)
		}
	}
}

// probesStarted counts the fake interpreters that have started (each leaves a file).
func probesStarted(dir string) int {
	entries, _ := os.ReadDir(dir)
	return len(entries)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}
