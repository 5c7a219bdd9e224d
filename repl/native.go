package repl

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// nativeOutput collects what the worker and its children write to fd 1 and fd 2:
// bytes that never pass through Python's sys.stdout. It keeps each run's as a
// terminal shows them (a progress bar redrawn with \r keeps its last state), at most
// LiveLimit bytes, the head and the tail of a longer output, as the worker keeps a
// cell's streams; and it strips the barrier the worker writes before a result when
// the pipe still held bytes the server had not read.
type nativeOutput struct {
	mu      sync.Mutex
	text    *terminalText
	live    liveStream    // the run's bytes as they came, for python_run's offset polling
	pending []byte        // bytes held back: maybe the start of the barrier
	barrier []byte        // the token being waited for, framed
	seen    chan struct{} // closed when the barrier arrives
	eof     chan struct{} // closed when the pipe is drained
}

func newNativeOutput() *nativeOutput {
	return &nativeOutput{eof: make(chan struct{}), text: newTerminalText(LiveLimit, streamHead)}
}

// drain reads f until EOF. The owner of the worker waits for it.
//
// Each read from the pipe and the keeping of what it read happen under n.mu. The worker
// skips its barrier when the kernel's pipe holds no byte
// (worker/PROTOCOL.md, The barrier): every byte it wrote was then taken by a read that
// has either been kept or is being kept under the lock take waits for, so a result with
// no barrier finds them all.
func (n *nativeOutput) drain(f *os.File) {
	defer close(n.eof)
	chunk := make([]byte, 32<<10)
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for done := false; !done; {
		err := rc.Read(func(fd uintptr) bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			k, err := syscall.Read(int(fd), chunk)
			for err == syscall.EINTR {
				k, err = syscall.Read(int(fd), chunk)
			}
			if err == syscall.EAGAIN {
				return false // wait until the pipe is readable
			}
			if k > 0 {
				n.addLocked(chunk[:k])
			}
			done = k <= 0 // EOF, or an error: the pipe is gone
			return true
		})
		if err != nil {
			return // closed by the owner
		}
	}
}

// addLocked keeps what drain read; the caller holds n.mu.
func (n *nativeOutput) addLocked(p []byte) {
	data := append(n.pending, p...)
	n.pending = nil
	if n.barrier == nil {
		n.keep(data)
		return
	}
	if i := bytes.Index(data, n.barrier); i >= 0 {
		n.keep(data[:i])
		n.keep(data[i+len(n.barrier):])
		n.barrier = nil
		close(n.seen)
		return
	}
	// Hold back a suffix that may be the start of a barrier split across reads.
	k := partialPrefix(data, n.barrier)
	n.keep(data[:len(data)-k])
	n.pending = append([]byte(nil), data[len(data)-k:]...)
}

func (n *nativeOutput) keep(p []byte) {
	n.text.write(p)
	n.live.add(string(p))
}

// partialPrefix is the length of the longest suffix of data that is a proper prefix
// of token.
func partialPrefix(data, token []byte) int {
	for k := min(len(token)-1, len(data)); k > 0; k-- {
		if bytes.HasPrefix(token, data[len(data)-k:]) {
			return k
		}
	}
	return 0
}

// reset starts a new run's collection and arms the barrier token.
func (n *nativeOutput) reset(token string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.text = newTerminalText(LiveLimit, streamHead)
	n.live = liveStream{}
	n.pending = nil
	n.barrier = []byte("\x1e" + token + "\x1e")
	n.seen = make(chan struct{})
}

// wait waits, at most d, until the barrier has arrived or the pipe is closed, so that
// everything the worker wrote before its result is in the buffer.
func (n *nativeOutput) wait(d time.Duration) {
	n.mu.Lock()
	seen := n.seen
	n.mu.Unlock()
	if seen == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-seen:
	case <-n.eof:
	case <-t.C:
	}
}

// take returns the run's native output as it is now (bounded, valid UTF-8) and
// whether some was left out. It changes nothing: live snapshots take it too.
func (n *nativeOutput) take() (string, bool) {
	out, truncated := n.takeCut()
	return out.Text, truncated
}

// takeCut is take with the gaps of what was left out (CutText).
func (n *nativeOutput) takeCut() (CutText, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.text.view()
	truncated := len(out.Gaps) > 0
	out = boundCut(out.Join(CutText{Text: string(n.pending)}), LiveLimit, streamHead, &truncated)
	return out.checked(), truncated
}

// from is the run's native output from offset on, as python_run's live snapshot shows
// it (the rules of liveStream.from, the bytes made valid UTF-8), the offset it starts
// at, and how many bytes the run has written so far.
func (n *nativeOutput) from(offset int64) (text string, start, end int64, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	text, start, _, err = n.live.from("native_stderr", offset)
	return strings.ToValidUTF8(text, "\uFFFD"), start, n.live.end, err
}
