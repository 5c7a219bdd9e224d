package repl

import (
	"os"
	"testing"
	"time"
)

// writeAll writes s to w or fails the test.
func writeAll(t *testing.T, w *os.File, s string) {
	t.Helper()
	if _, err := w.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A run's native output is what its current pipe brings until its barrier; what comes
// between runs, and whatever an earlier pipe brings after the worker moved to a new one,
// is the background's, each byte once (docs/contract.md §5.5).
func TestNativeOutputKeepsTheBackgroundApart(t *testing.T) {
	n := newNativeOutput()
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	done1 := make(chan struct{})
	go func() { defer close(done1); n.drain(r1, n.first()) }()

	n.reset("tok1")
	writeAll(t, w1, "run one\n\x1etok1\x1ebetween\n")
	n.wait(5 * time.Second)
	out, _ := n.finish()
	if out.Text != "run one\n" {
		t.Fatalf("run one's native output %q", out.Text)
	}
	// The worker moved to a new pipe with that result; the old one is a child's now.
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	src2 := n.expect()
	done2 := make(chan struct{})
	go func() { defer close(done2); n.drain(r2, src2) }()
	n.promote()
	bg, _ := n.takeBackground()
	if bg.Text != "between\n" {
		t.Fatalf("background after run one %q", bg.Text)
	}

	n.reset("tok2")
	writeAll(t, w1, "old pipe during run two\n")
	writeAll(t, w2, "run two\n\x1etok2\x1e")
	n.wait(5 * time.Second)
	out, _ = n.finish()
	if out.Text != "run two\n" {
		t.Fatalf("run two's native output %q", out.Text)
	}
	bg, _ = n.takeBackground() // reads what the old pipe holds even if its reader is late
	if bg.Text != "old pipe during run two\n" {
		t.Fatalf("background after run two %q", bg.Text)
	}
	if bg, _ = n.takeBackground(); bg.Text != "" {
		t.Fatalf("background reported twice: %q", bg.Text)
	}
	// The old pipe ends with its last writer; its source is dropped.
	w1.Close()
	<-done1
	n.takeBackground()
	n.mu.Lock()
	left := len(n.sources)
	n.mu.Unlock()
	if left != 1 {
		t.Fatalf("%d sources left, want the current one", left)
	}
	w2.Close()
	<-done2
	r1.Close()
	r2.Close()
}
