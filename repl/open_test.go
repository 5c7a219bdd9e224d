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
	fake := fakePython(t, `sleep 60`)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := m.Open(ctx, OpenRequest{Name: "c", Project: t.TempDir(), Python: fake})
	if err == nil || !strings.Contains(err.Error(), msgOpenCancelled) {
		t.Fatalf("err = %v", err)
	}
	if n := len(m.List()); n != 1 {
		t.Fatalf("%d sessions published", n)
	}
}

func TestOpeningCapacity(t *testing.T) {
	m := newTestManager(t, realPython(t))
	fake := fakePython(t, `sleep 60`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan error, maxOpening)
	for range maxOpening {
		go func() {
			_, err := m.Open(ctx, OpenRequest{Name: "slow", Project: t.TempDir(), Python: fake})
			started <- err
		}()
	}
	testwait.Until(t, 10*time.Second, "every opening slot to be taken", func() bool { return len(m.opening) == maxOpening })
	_, err := m.Open(t.Context(), OpenRequest{Name: "fifth", Project: t.TempDir(), Python: realPython(t)})
	if err == nil || !strings.Contains(err.Error(), msgOpeningFull) {
		t.Fatalf("err = %v", err)
	}
	cancel()
	for range maxOpening {
		<-started
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}
