package repl

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// receiveFile reads one message from the Unix socket sock and returns the descriptor
// it carries (SCM_RIGHTS), close-on-exec and non-blocking, waiting at most timeout.
func receiveFile(sock *os.File, timeout time.Duration) (*os.File, error) {
	if err := sock.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	rc, err := sock.SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(4*4)) // room for a few: any past the first are closed
	var n, oobn int
	var recvErr error
	// The fork lock keeps a concurrent exec from inheriting the descriptor before it
	// is marked close-on-exec (MSG_CMSG_CLOEXEC is Linux-only).
	syscall.ForkLock.RLock()
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, recvErr = syscall.Recvmsg(int(fd), buf, oob, 0)
		return recvErr != syscall.EAGAIN
	})
	var fds []int
	if err == nil && recvErr == nil {
		fds = rights(oob[:oobn])
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
		}
	}
	syscall.ForkLock.RUnlock()
	switch {
	case err != nil:
		return nil, err
	case recvErr != nil:
		return nil, recvErr
	case len(fds) == 0:
		if n == 0 {
			return nil, errors.New("the socket closed")
		}
		return nil, errors.New("a message without a descriptor")
	}
	for _, extra := range fds[1:] {
		syscall.Close(extra)
	}
	// Non-blocking, so that the os.File is polled by the runtime: a reader blocked on
	// it ends when it is closed.
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), "native"), nil
}

// rights are the descriptors the control messages carry.
func rights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}
