package testwait

import (
	"testing"
	"time"
)

// margin is kept before the test's deadline: room to fail, print and clean up.
const margin = 5 * time.Second

// interval is how often a condition is polled.
const interval = 20 * time.Millisecond

// Bound is limit, cut so that it ends margin before the test's deadline; never
// negative.
func Bound(t *testing.T, limit time.Duration) time.Duration {
	if d, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(d)-margin)
	}
	return max(limit, 0)
}

// Until polls cond until it holds. The test fails, naming what it waited for, if
// limit (cut by Bound) passes first or the test's context ends.
func Until(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	bound := Bound(t, limit)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-timer.C:
			if cond() {
				return
			}
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		case <-t.Context().Done():
			t.Fatalf("the test ended while waiting for %s", what)
		case <-tick.C:
		}
	}
}
