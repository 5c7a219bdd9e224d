package repl

import (
	"bytes"
	"sync"
)

// OutputWatch lets the caller of Execute follow its run's output while Execute
// blocks, as progress notifications do. The run pulses Changed, without ever
// blocking the reader of the worker's frames, each time output arrives; Latest says
// what the output is then. One watch follows one run: an Execute's, or the one
// a python_run call waits for (Session.Await).
type OutputWatch struct {
	changed chan struct{}

	mu  sync.Mutex
	run *run
}

// NewOutputWatch makes a watch to pass in ExecRequest.Watch.
func NewOutputWatch() *OutputWatch {
	return &OutputWatch{changed: make(chan struct{}, 1)}
}

// Changed receives after output arrived; pulses that come while nobody receives
// merge into one.
func (w *OutputWatch) Changed() <-chan struct{} { return w.changed }

// Latest returns the last line of the run's output (in the stream written last, at
// most maxRunes characters, control characters removed) and how many bytes of
// output the run has had in both streams.
func (w *OutputWatch) Latest(maxRunes int) (line string, total int64) {
	w.mu.Lock()
	r := w.run
	w.mu.Unlock()
	if r == nil {
		return "", 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	stream := &r.stdout
	if r.lastStream == "stderr" {
		stream = &r.stderr
	}
	kept, _ := stream.kept()
	return lastLine(kept, maxRunes), r.stdout.end + r.stderr.end
}

func (w *OutputWatch) attach(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.run = r
}

func (w *OutputWatch) pulse() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// lastLine is the last line of b that is not blank, where a carriage return also
// ends a line (progress bars redraw themselves after one), cut to maxRunes
// characters, without control characters.
func lastLine(b []byte, maxRunes int) string {
	b = bytes.TrimRight(b, " \t\r\n")
	b = b[bytes.LastIndexAny(b, "\r\n")+1:]
	b = bytes.TrimLeft(b, " \t")
	var out []rune
	for _, c := range string(b) {
		if len(out) == maxRunes {
			break
		}
		switch {
		case c == '\t':
			out = append(out, ' ')
		case c < 0x20 || c == 0x7f:
		default:
			out = append(out, c)
		}
	}
	return string(out)
}
