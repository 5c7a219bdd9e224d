package guardian

import (
	"fmt"
	"os"
)

// Direction says which way a pipe to the child carries bytes.
type Direction int

const (
	// ToChild is a pipe the server writes and the child reads.
	ToChild Direction = iota
	// FromChild is a pipe the child writes and the server reads.
	FromChild
	// Socket is a Unix stream socket pair, one end the server's (non-blocking, so its
	// reads take deadlines) and one the child's: descriptors can travel on it.
	Socket
)

// Pipes says which of a child's descriptors [StartPiped] connects to a pipe of the
// server's. Descriptors without a pipe go to /dev/null.
type Pipes struct {
	// Stdin makes the child's fd 0 a pipe the server writes.
	Stdin bool
	// Stdout makes the child's fd 1 a pipe of its own the server reads (a
	// downstream MCP server's protocol channel); Output then takes fd 2 alone.
	Stdout bool
	// Output makes the child's fd 2 (and fd 1, unless Stdout is set) one pipe the
	// server reads: what the child writes outside any protocol.
	Output bool
	// Extra are the child's fd 3, 4, ... in order.
	Extra []Direction
}

// Piped is a guardian-owned child and the server's ends of its pipes. Fields for
// pipes that were not asked for are nil. The caller owns the ends: it closes them
// once it is done with the child (after [Process.Wait], or earlier to hang up).
type Piped struct {
	*Process
	Stdin  *os.File
	Stdout *os.File
	Output *os.File
	Extra  []*os.File
}

// StartPiped starts spec's program under a guardian with the pipes asked for, and
// returns once the child runs. The child's ends are closed here on every path, so a
// reader of the server's end sees EOF when the child (and every descendant holding
// a copy) is gone; on failure the server's ends are closed too.
func StartPiped(executable string, spec Spec, pipes Pipes) (*Piped, error) {
	p := &Piped{}
	cfg := Config{Executable: executable, Spec: spec}
	var children []*os.File // the child's ends, closed once it has its copies
	// pipe makes one pipe and returns the server's end and the child's end.
	pipe := func(dir Direction) (server, child *os.File, err error) {
		if dir == Socket {
			if server, child, err = socketPair(); err != nil { // ours non-blocking, both close-on-exec
				return nil, nil, err
			}
			children = append(children, child)
			return server, child, nil
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("create a pipe for the child: %w", err)
		}
		if dir == ToChild {
			server, child = w, r
		} else {
			server, child = r, w
		}
		children = append(children, child)
		return server, child, nil
	}
	err := func() (err error) {
		if pipes.Stdin {
			if p.Stdin, cfg.Stdin, err = pipe(ToChild); err != nil {
				return err
			}
		}
		if pipes.Stdout {
			if p.Stdout, cfg.Stdout, err = pipe(FromChild); err != nil {
				return err
			}
		}
		if pipes.Output {
			if p.Output, cfg.Output, err = pipe(FromChild); err != nil {
				return err
			}
		}
		for _, dir := range pipes.Extra {
			server, child, err := pipe(dir)
			if err != nil {
				return err
			}
			p.Extra = append(p.Extra, server)
			cfg.ExtraFiles = append(cfg.ExtraFiles, child)
		}
		p.Process, err = Start(cfg)
		return err
	}()
	// The child has its copies now (or never will): ours would hide its death
	// from the server's readers.
	closeFiles(children...)
	if err != nil {
		p.CloseAll()
		return nil, err
	}
	return p, nil
}

// CloseAll closes every server end of the child's pipes; closing one twice is
// harmless.
func (p *Piped) CloseAll() {
	closeFiles(p.Stdin, p.Stdout, p.Output)
	closeFiles(p.Extra...)
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}
