//go:build linux

package interop

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// errNoNetns says that this machine gives the test no network namespace of its own.
var errNoNetns = errors.New("no network namespace")

// startIsolated opens n TCP listeners on 127.0.0.1 inside a new network namespace whose
// only interface is loopback, then calls start, which must start the agent's process,
// from the same OS thread, so that the process is born in that namespace too. The
// listeners are served from this process's other threads as usual: a socket stays in
// the namespace it was made in.
//
// Why not unshare(1): a namespace made for the child alone would hide the fake model
// APIs, which live in this test process and record what the model is given. A
// network namespace belongs to a thread, so one locked OS thread enters a new one,
// opens the listeners and forks the child, and is never given back to the Go
// runtime: a goroutine that exits locked takes its thread with it, and the runtime
// never clones new threads from a locked one.
//
// It needs CAP_SYS_ADMIN (root, as on these machines and in CI); without it the error
// wraps errNoNetns and nothing was started.
func startIsolated(n int, start func([]net.Listener) error) ([]net.Listener, error) {
	type result struct {
		ls  []net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose (above)
		ls, err := func() ([]net.Listener, error) {
			if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
				return nil, fmt.Errorf("%w: unshare(CLONE_NEWNET): %v", errNoNetns, err)
			}
			if err := loopbackUp(); err != nil {
				return nil, fmt.Errorf("bringing up loopback in the new network namespace: %w", err)
			}
			ls := make([]net.Listener, 0, n)
			closeAll := func() {
				for _, l := range ls {
					l.Close()
				}
			}
			for range n {
				l, err := net.Listen("tcp4", "127.0.0.1:0")
				if err != nil {
					closeAll()
					return nil, fmt.Errorf("listening on 127.0.0.1 in the new network namespace: %w", err)
				}
				ls = append(ls, l)
			}
			if err := start(ls); err != nil {
				closeAll()
				return nil, err
			}
			return ls, nil
		}()
		done <- result{ls, err}
	}()
	r := <-done
	return r.ls, r.err
}

// loopbackUp sets IFF_UP on lo: a new network namespace starts with loopback down.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	// struct ifreq: the interface name, then a union whose first member here is the
	// short flags; 40 bytes on 64-bit Linux.
	var req struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], "lo")
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req))); errno != 0 {
		return fmt.Errorf("SIOCGIFFLAGS: %w", errno)
	}
	req.flags |= syscall.IFF_UP
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req))); errno != 0 {
		return fmt.Errorf("SIOCSIFFLAGS: %w", errno)
	}
	return nil
}

// netnsOf names the network namespace of a process ("net:[4026531840]"); 0 is the
// calling thread. Not /proc/self: that is the main thread's, and the locked thread of
// startIsolated may have been the main thread (the runtime then parks it for good
// instead of ending it), so the process's main thread may sit in the new namespace
// while every thread that runs Go code does not.
func netnsOf(pid int) (string, error) {
	path := "/proc/thread-self/ns/net"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/ns/net", pid)
	}
	return os.Readlink(path)
}
