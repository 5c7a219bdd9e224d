package interop

import (
	"regexp"
	"testing"
)

// progressSummary is what the clients' progress case prints: the notifications their
// SDK's progress callback saw during an execute_python call, in order.
type progressSummary struct {
	IsError bool   `json:"isError"`
	Stdout  string `json:"stdout"`
	Notes   []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"` // "" when the notification had none
	} `json:"notes"`
}

var progressLine = regexp.MustCompile(`^progress step [0-3]$`)

// checkProgress: a cell printing a line every 0.5 s for 2 s reaches the SDK's
// progress callback (docs/contract.md §3.1): the first output and then at most one a
// second, so 2 or 3 notifications, each with the last line as its message and more
// progress than the one before.
func checkProgress(t *testing.T, p progressSummary) {
	t.Helper()
	if p.IsError || p.Stdout != "progress step 0\nprogress step 1\nprogress step 2\nprogress step 3\n" {
		t.Errorf("the progress cell: isError %v, stdout %q", p.IsError, p.Stdout)
	}
	if n := len(p.Notes); n < 2 || n > 3 {
		t.Errorf("the progress callback saw %d notifications, want 2 or 3: %+v", n, p.Notes)
	}
	last := 0.0
	for i, n := range p.Notes {
		if !progressLine.MatchString(n.Message) || n.Progress <= last {
			t.Errorf("notification %d: progress %v (after %v), message %q", i, n.Progress, last, n.Message)
		}
		last = n.Progress
	}
}
