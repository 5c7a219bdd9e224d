package repl

import (
	"strings"
	"testing"
)

func TestLastLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"\n\n", ""},
		{"step 1\nstep 2\n", "step 2"},
		{"step 1\nstep 2", "step 2"},
		{"  50%|###  | 5/10\r  60%|#### | 6/10", "60%|#### | 6/10"},
		{"done\r\n   \n", "done"},
		{"a\tb\x1b[0m\x07c", "a b[0mc"},
		{strings.Repeat("é", 300), strings.Repeat("é", 200)},
	} {
		if got := lastLine([]byte(c.in), 200); got != c.want {
			t.Errorf("lastLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The watch is pulsed by output without blocking, merges pulses nobody took, and
// reports the last line of the stream written last with the bytes of both.
func TestOutputWatch(t *testing.T) {
	w := NewOutputWatch()
	r := newRun(t.Context(), ExecRequest{Watch: w})
	if line, n := w.Latest(200); line != "" || n != 0 {
		t.Fatalf("Latest before output = %q, %d", line, n)
	}
	for i := range 100 {
		r.appendOutput("stdout", strings.Repeat("x", i)+"\n") // never blocks
	}
	r.appendOutput("stderr", "warning: careful\n")
	select {
	case <-w.Changed():
	default:
		t.Fatal("output did not pulse the watch")
	}
	select {
	case <-w.Changed():
		t.Fatal("pulses nobody took were not merged into one")
	default:
	}
	line, n := w.Latest(200)
	if line != "warning: careful" || n != 100+99*100/2+17 {
		t.Fatalf("Latest = %q, %d", line, n)
	}
	r.appendOutput("stdout", "")
	select {
	case <-w.Changed():
		t.Fatal("empty output pulsed the watch")
	default:
	}
	r.appendOutput("stdout", "back on stdout")
	if line, _ := w.Latest(200); line != "back on stdout" {
		t.Fatalf("Latest = %q, want the stream written last", line)
	}
}
