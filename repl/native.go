package repl

import (
	"bytes"
	"os"
	"slices"
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
//
// A run collects from its dispatch (reset) until its barrier arrives or its result is
// taken (finish). What comes outside a run, between cells, is the session's
// background processes' (a child of an earlier cell, a daemon): it is kept apart, as
// a terminal shows it, within backgroundLimit bytes, and reported with the next result
// as background output (takeBackground), never inside a later cell's stderr.
//
// The worker's fd 1 and 2 need not stay one pipe: after a run that started a child it
// puts a new pipe there and hands the server its read end
// (worker/PROTOCOL.md, Native pipes). Each pipe is a source, drained on its own; only
// the current one, where the worker and the children of the cells since write, feeds a
// run; what an earlier one brings is the background's, whenever it comes.
type nativeOutput struct {
	mu         sync.Mutex
	current    *nativeSource // the pipe at the worker's fd 1 and 2
	next       *nativeSource // the pipe the worker put there with its last result, until that result is taken (promote)
	text       *terminalText
	collecting bool            // a run (or the worker's start) owns what the current pipe brings
	background *terminalText   // what came outside a run since the last result
	live       liveStream      // the run's bytes as they came, for python_run's offset polling
	pending    []byte          // bytes held back: maybe the start of the barrier
	barrier    []byte          // the token being waited for, framed
	seen       chan struct{}   // closed when the barrier arrives
	sources    []*nativeSource // every pipe not yet gone, the current one too
}

// nativeSource is one pipe of the worker's native output.
type nativeSource struct {
	eof chan struct{} // closed when the pipe is drained
	// fd is the pipe's read end once drain has it, for takeBackground; -1 before, and
	// once drained or closed (under n.mu, so a read never reaches a number reused
	// meanwhile), when gone is set too.
	fd   int
	gone bool
}

func newNativeOutput() *nativeOutput {
	first := &nativeSource{eof: make(chan struct{}), fd: -1}
	return &nativeOutput{
		current: first, sources: []*nativeSource{first}, text: newTerminalText(LiveLimit, streamHead),
		background: newTerminalText(backgroundLimit, backgroundHead),
	}
}

// first is the pipe the worker started with, to drain.
func (n *nativeOutput) first() *nativeSource {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.current
}

// expect is a pipe the worker put at fd 1 and 2 with the result it is sending: it
// becomes the current one once that result is taken (promote); until then what it
// brings is the background's. The caller drains it.
func (n *nativeOutput) expect() *nativeSource {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next = &nativeSource{eof: make(chan struct{}), fd: -1}
	n.sources = append(n.sources, n.next)
	return n.next
}

// close marks every pipe closed, before the owner closes their files.
func (n *nativeOutput) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, src := range n.sources {
		src.fd, src.gone = -1, true
	}
}

// promote makes the pipe expect announced the current one, once the run before it has
// taken its native output.
func (n *nativeOutput) promote() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.next != nil {
		n.current, n.next = n.next, nil
	}
}

// drain reads f until EOF. The owner of the worker waits for it.
//
// Each read from the pipe and the keeping of what it read happen under n.mu. The worker
// skips its barrier when the kernel's pipe holds no byte
// (worker/PROTOCOL.md, The barrier): every byte it wrote was then taken by a read that
// has either been kept or is being kept under the lock take waits for, so a result with
// no barrier finds them all.
func (n *nativeOutput) drain(f *os.File, src *nativeSource) {
	defer func() {
		n.mu.Lock()
		src.fd, src.gone = -1, true
		n.mu.Unlock()
		close(src.eof)
	}()
	chunk := make([]byte, 32<<10)
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { // not f.Fd(), which would make the pipe blocking
		n.mu.Lock()
		if !src.gone {
			src.fd = int(fd)
		}
		n.mu.Unlock()
	})
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
				n.addLocked(src, chunk[:k])
			}
			done = k <= 0 // EOF, or an error: the pipe is gone
			return true
		})
		if err != nil {
			return // closed by the owner
		}
	}
}

// addLocked keeps what drain read from src; the caller holds n.mu.
func (n *nativeOutput) addLocked(src *nativeSource, p []byte) {
	if src != n.current {
		n.background.write(p) // an earlier pipe's, or one not yet current
		return
	}
	data := append(n.pending, p...)
	n.pending = nil
	if n.barrier == nil {
		n.keep(data)
		return
	}
	if i := bytes.Index(data, n.barrier); i >= 0 {
		n.keep(data[:i])
		rest := data[i+len(n.barrier):]
		n.barrier = nil
		n.collecting = false // the run's bytes are all in; what follows is the background's
		close(n.seen)
		n.keep(rest)
		return
	}
	// Hold back a suffix that may be the start of a barrier split across reads.
	k := partialPrefix(data, n.barrier)
	n.keep(data[:len(data)-k])
	n.pending = append([]byte(nil), data[len(data)-k:]...)
}

func (n *nativeOutput) keep(p []byte) {
	if len(p) == 0 {
		return
	}
	if !n.collecting {
		n.background.write(p)
		return
	}
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
	n.collecting = true
}

// wait waits, at most d, until the barrier has arrived or the pipe is closed, so that
// everything the worker wrote before its result is in the buffer.
func (n *nativeOutput) wait(d time.Duration) {
	n.mu.Lock()
	seen, eof := n.seen, n.current.eof
	n.mu.Unlock()
	if seen == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-seen:
	case <-eof:
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
	return n.takeCutLocked()
}

func (n *nativeOutput) takeCutLocked() (CutText, bool) {
	out := n.text.view()
	truncated := len(out.Gaps) > 0
	out = boundCut(out.Join(CutText{Text: string(n.pending)}), LiveLimit, streamHead, &truncated)
	return out.checked(), truncated
}

// finish is takeCut for a run whose result is in: from now on, until the next reset,
// what comes is the background's.
func (n *nativeOutput) finish() (CutText, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.collecting = false
	out, truncated := n.takeCutLocked()
	n.pending = nil // taken with the run: not the background's too
	return out, truncated
}

// takeBackground returns what came outside a run since it was last taken (bounded,
// valid UTF-8), whether some was left out, and starts afresh.
//
// What the pipes other than the current one already hold is read first: a process of
// an earlier cell that wrote before the run ended is reported with its result, not
// with some later one, however late its pipe's reader wakes.
func (n *nativeOutput) takeBackground() (CutText, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	chunk := make([]byte, 32<<10)
	budget := backgroundFlushBytes // a writer faster than this read must not hold the lock for ever
	for _, src := range n.sources {
		for src != n.current && src.fd >= 0 && budget > 0 {
			k, err := syscall.Read(src.fd, chunk)
			if err == syscall.EINTR {
				continue
			}
			if k <= 0 {
				break // EAGAIN (empty), or EOF, which its drain sees too
			}
			budget -= k
			n.addLocked(src, chunk[:k])
		}
	}
	n.sources = slices.DeleteFunc(n.sources, func(src *nativeSource) bool { return src.gone })
	out := n.background.view()
	n.background = newTerminalText(backgroundLimit, backgroundHead)
	return out.checked(), len(out.Gaps) > 0
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
