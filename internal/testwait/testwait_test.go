package testwait

import (
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	start := time.Now()
	calls := 0
	Until(t, 10*time.Second, "the third poll", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("polled %d times, want 3", calls)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestBoundKeepsTheMarginBeforeTheDeadline(t *testing.T) {
	d, ok := t.Deadline()
	if !ok {
		if got := Bound(t, time.Minute); got != time.Minute {
			t.Fatalf("without a deadline Bound(1m) = %v", got)
		}
		return
	}
	if got := Bound(t, 1000*time.Hour); got > time.Until(d)-margin+time.Second {
		t.Fatalf("Bound = %v, past the deadline's margin (%v left)", got, time.Until(d))
	}
	if got := Bound(t, time.Millisecond); got != time.Millisecond {
		t.Fatalf("a short limit was changed: %v", got)
	}
}
