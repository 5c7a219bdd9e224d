package proctable

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrUnsupported is what Read and BootTicks return where there is no /proc.
var ErrUnsupported = errors.New("no process table on this platform")

// TicksPerSecond is the unit of Proc.Start and BootTicks: the kernel's USER_HZ, which
// /proc reports start times in, and which is 100 on every platform Go runs Linux on.
const TicksPerSecond = 100

// Proc is one process as the table shows it.
type Proc struct {
	Pid, Ppid, Pgid int
	// Name is the command name the kernel keeps (at most 15 bytes).
	Name string
	// Start is when the process started, in ticks since boot.
	Start uint64
	// Zombie: it has exited and its parent has not reaped it yet; Status is then how
	// it ended, as wait(2) reports it, when the kernel says (Linux 3.5 and newer).
	Zombie    bool
	Status    syscall.WaitStatus
	HasStatus bool
}

// Ended says how a zombie ended, in the words repl's messages use: "exit status N",
// or the signal's name ("SIGINT"); "" when it is no zombie or the kernel did not say.
func (p Proc) Ended() string {
	switch {
	case !p.Zombie || !p.HasStatus:
		return ""
	case p.Status.Signaled():
		return SignalName(p.Status.Signal())
	default:
		return fmt.Sprintf("exit status %d", p.Status.ExitStatus())
	}
}

// SignalName is a signal's conventional name, SIGINT, or "signal N" for one without.
func SignalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return fmt.Sprintf("signal %d", int(sig))
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
	syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
	syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
}
