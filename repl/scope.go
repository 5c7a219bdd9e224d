package repl

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iota-uz/repl-mcp/internal/proctable"
)

// The scope of an interrupt (docs/contract.md §5.6): a timeout, a cancel or an
// interrupt signals the worker and the processes the running cell started, never
// those of earlier cells (a Dask cluster, a server, a pool), and the result names the
// processes of the session that ended meanwhile. Which cell started a process: the
// run the worker reported it for (`job` and `process` frames: Popen, fork, spawn),
// and for a child it did not report (forked by C code) or an orphan the guardian
// adopted, whether it started after the cell was dispatched. A process's descendants
// are its own. Only the last resort, killing a worker that did not stop, reaches the
// whole group, and that result says the variables were cleared.

// scopeProc is one process of the session when the interrupt came.
type scopeProc struct {
	proctable.Proc
	cell bool            // started by the interrupted cell
	sent string          // the signal the interrupt sent it: "SIGINT", "SIGKILL" (its job group), ""
	last *proctable.Proc // as last read, while it was there
}

// interruptScope is what an interrupt did, to say in the run's result.
type interruptScope struct {
	procs map[int]*scopeProc // the session's processes at the interrupt, worker and guardian aside
}

// interruptCell stops the cell of run r: it SIGKILLs the detached groups the run
// started, sends SIGINT to the other processes it started, then to the worker alone.
func (p *process) interruptCell(r *run) *interruptScope {
	sc := &interruptScope{procs: p.sessionProcs(r)}
	for _, pgid := range p.killJobs(r.id) {
		for _, sp := range sc.procs {
			if sp.Pgid == pgid {
				sp.cell, sp.sent = true, "SIGKILL"
			}
		}
	}
	for _, pid := range sortedPids(sc.procs) { // parents (older) before their children, mostly
		sp := sc.procs[pid]
		if sp.cell && sp.sent == "" && !sp.Zombie {
			if err := syscall.Kill(pid, syscall.SIGINT); err == nil {
				sp.sent = "SIGINT"
			}
		}
	}
	if p.alive() { // the pid is ours only while the worker runs
		_ = syscall.Kill(p.ready.Pid, syscall.SIGINT)
	}
	return sc
}

// sessionProcs is every process below the worker's guardian when the interrupt comes,
// but the guardian and the worker, each marked with whether r's cell started it. With
// no process table (not Linux) it is the children the worker reported, by name unknown.
func (p *process) sessionProcs(r *run) map[int]*scopeProc {
	p.childrenMu.Lock()
	origins := make(map[int]string, len(p.origins))
	for pid, run := range p.origins {
		origins[pid] = run
	}
	p.childrenMu.Unlock()
	table, err := proctable.Read()
	now, clockErr := proctable.BootTicks()
	if err != nil || clockErr != nil { // no table here (proctable.ErrUnsupported), or none to read
		procs := map[int]*scopeProc{}
		for pid, run := range origins {
			procs[pid] = &scopeProc{Proc: proctable.Proc{Pid: pid}, cell: run == r.id}
		}
		return procs
	}
	// The cell was dispatched this many ticks ago; a process started in the same tick
	// (10 ms) counts as the cell's unless the worker reported it for another run.
	dispatched := now - min(now, uint64(time.Since(r.dispatched)/(time.Second/proctable.TicksPerSecond)))
	guardian, worker := p.proc.Group(), p.ready.Pid
	children := map[int][]proctable.Proc{}
	for _, proc := range table {
		children[proc.Ppid] = append(children[proc.Ppid], proc)
	}
	procs := map[int]*scopeProc{}
	var claim func(proc proctable.Proc, cell bool)
	claim = func(proc proctable.Proc, cell bool) {
		if _, seen := procs[proc.Pid]; seen || len(procs) >= maxScopeProcs {
			return
		}
		procs[proc.Pid] = &scopeProc{Proc: proc, cell: cell}
		for _, child := range children[proc.Pid] {
			claim(child, cell)
		}
	}
	for _, top := range [][]proctable.Proc{children[worker], children[guardian]} {
		for _, proc := range top {
			if proc.Pid == worker {
				continue
			}
			run, reported := origins[proc.Pid]
			claim(proc, run == r.id || !reported && proc.Start >= dispatched)
		}
	}
	return procs
}

// note says which of the session's processes ended during the interrupt: those of
// the cell it signalled (waiting up to wait for them to go, while any is left), those
// of the cell still running, and those of earlier cells that ended too. "" when none
// did and none is left running.
func (sc *interruptScope) note(wait time.Duration) string {
	if sc == nil || len(sc.procs) == 0 {
		return ""
	}
	deadline := time.Now().Add(wait)
	for {
		left := false
		for _, sp := range sc.procs {
			if sp.sent != "" && !sc.ended(sp) {
				left = true
				break
			}
		}
		if !left || time.Now().After(deadline) {
			break
		}
		time.Sleep(scopePollInterval)
	}
	var ended, running, others []string
	for _, pid := range sortedPids(sc.procs) {
		sp := sc.procs[pid]
		if sp.Zombie { // it had ended before the interrupt
			continue
		}
		gone := sc.ended(sp)
		how := sp.howEnded
		switch {
		case sp.sent != "" && gone:
			ended = append(ended, sp.describe(how(sp.sent)))
		case sp.sent != "":
			running = append(running, sp.describe(""))
		case gone:
			others = append(others, sp.describe(how("")))
		}
	}
	var b strings.Builder
	if len(ended) > 0 {
		fmt.Fprintf(&b, msgInterruptEnded, listedProcs(ended))
	}
	if len(running) > 0 {
		fmt.Fprintf(&b, msgInterruptSurvived, listedProcs(running))
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, msgOthersEnded, listedProcs(others))
	}
	return b.String()
}

// ended reports whether a process of the snapshot has gone, or is a zombie: its pid
// no longer names it (a later process may have taken the number; the start time tells).
// It keeps the last state read, for howEnded.
func (sc *interruptScope) ended(sp *scopeProc) bool {
	now, ok := proctable.Stat(sp.Pid)
	if !ok && sp.Name == "" { // no process table: the pid alone
		return syscall.Kill(sp.Pid, 0) == syscall.ESRCH
	}
	if !ok || now.Start != sp.Start {
		sp.last = nil
		return true
	}
	sp.last = &now
	return now.Zombie
}

// howEnded is how a process that is gone ended, when the kernel still says (a zombie),
// else the signal the interrupt sent it ("" for none: it ended by itself).
func (sp *scopeProc) howEnded(sent string) string {
	if sp.last != nil {
		if how := sp.last.Ended(); how != "" {
			return how
		}
	}
	return sent
}

// describe is "name (pid N, how)", or "(pid N)" without how.
func (sp *scopeProc) describe(how string) string {
	name := sp.Name
	if name == "" {
		name = "process"
	}
	if how == "" {
		return fmt.Sprintf("%s (pid %d)", name, sp.Pid)
	}
	return fmt.Sprintf("%s (pid %d, %s)", name, sp.Pid, how)
}

// listedProcs joins at most maxScopeNamed items, then says how many more there were.
func listedProcs(items []string) string {
	if len(items) <= maxScopeNamed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxScopeNamed], ", ") + fmt.Sprintf(msgScopeMore, len(items)-maxScopeNamed)
}

func sortedPids(procs map[int]*scopeProc) []int {
	pids := make([]int, 0, len(procs))
	for pid := range procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}
