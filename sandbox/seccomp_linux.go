package sandbox

import (
	"fmt"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Constants of the socket calls the filter reads (socket(2), send(2)).
const (
	afUnix      = unix.AF_UNIX
	afInet      = unix.AF_INET
	afInet6     = unix.AF_INET6
	sockStream  = unix.SOCK_STREAM
	sockTypeLow = 0xf // SOCK_TYPE_MASK: the type without SOCK_NONBLOCK and SOCK_CLOEXEC
	ipprotoTCP  = unix.IPPROTO_TCP
	msgFastOpen = unix.MSG_FASTOPEN
)

// refused is how the filter refuses a call: EACCES, which Python raises as
// PermissionError, as it does Landlock's own refusals.
const refused = seccomp.ActionErrno | seccomp.Action(unix.EACCES)

// seccompPolicy is the filter for p at ABI abi, nil when it needs none. With the
// network off it refuses what Landlock cannot see: every socket but a TCP one over
// IPv4 or IPv6 (and, with no proxy, those too), so no UDP (DNS included), raw,
// netlink, packet or new Unix socket (a pathname Unix socket reaches any service
// of the user's: D-Bus, an SSH agent, docker.sock); socketpair except Unix ones
// (asyncio's self-pipe); listen (an unbound TCP socket would listen on an
// ephemeral port without any bind Landlock sees); TCP Fast Open, which connects
// inside sendto and sendmsg; and io_uring, whose operations bypass the socket
// checks. Without Landlock ABI 3 it also refuses truncate(2) by path, which
// Landlock could not confine to the writable roots.
func seccompPolicy(p *Policy, abi int) *seccomp.Policy {
	var deny []seccomp.SyscallGroup
	if !p.Network {
		names := []string{"listen"}
		var conditional []seccomp.NameWithConditions
		if p.ProxyPort == 0 {
			names = append(names, "socket")
		} else {
			conditional = append(conditional,
				cond("socket", arg(0, seccomp.NotEqual, afInet), arg(0, seccomp.NotEqual, afInet6)),
				cond("socket", arg(1, seccomp.BitsSet, sockTypeLow&^sockStream)),
				cond("socket", arg(1, seccomp.BitsNotSet, sockStream)),
				cond("socket", arg(2, seccomp.NotEqual, 0), arg(2, seccomp.NotEqual, ipprotoTCP)))
		}
		conditional = append(conditional,
			cond("socketpair", arg(0, seccomp.NotEqual, afUnix)),
			cond("sendto", arg(3, seccomp.BitsSet, msgFastOpen)),
			cond("sendmsg", arg(2, seccomp.BitsSet, msgFastOpen)),
			cond("sendmmsg", arg(3, seccomp.BitsSet, msgFastOpen)))
		deny = append(deny,
			seccomp.SyscallGroup{Names: names, NamesWithCondtions: conditional, Action: refused},
			seccomp.SyscallGroup{Names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
				Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM)})
	}
	if abi < 3 {
		deny = append(deny, seccomp.SyscallGroup{Names: []string{"truncate"}, Action: refused})
	}
	if len(deny) == 0 {
		return nil
	}
	return &seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: deny}
}

func cond(name string, conditions ...seccomp.Condition) seccomp.NameWithConditions {
	return seccomp.NameWithConditions{Name: name, Conditions: conditions}
}

func arg(n uint32, op seccomp.Operation, v uint64) seccomp.Condition {
	return seccomp.Condition{Argument: n, Operation: op, Value: v}
}

// loadSeccomp installs, on the calling thread only, the filter of seccompPolicy and
// in front of it a guard that refuses every system call of another architecture
// (an i386 program on x86_64, a 32-bit ARM one on arm64): go-seccomp-bpf lets those
// through, and their socketcall would slip past the socket rules.
func loadSeccomp(p *Policy, k Kernel) error {
	native, err := arch.GetInfo("")
	if err != nil {
		return fmt.Errorf("sandbox: seccomp: %w", err)
	}
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipFalse: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionAllow)},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
	}
	if err := loadBPF(guard); err != nil {
		return err
	}
	policy := seccompPolicy(p, k.LandlockABI)
	if policy == nil {
		return nil
	}
	insts, err := policy.Assemble()
	if err != nil {
		return fmt.Errorf("sandbox: seccomp: %w", err)
	}
	return loadBPF(insts)
}

// loadBPF installs insts as a seccomp filter of the calling thread (no TSYNC: the
// guardian's other threads stay as they are). no_new_privs is set already.
func loadBPF(insts []bpf.Instruction) error {
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return fmt.Errorf("sandbox: seccomp: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("sandbox: seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}
