package guardian

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// TestTeardownReapsTheChild: the guardian reaps its child before it kills its own
// group, so the child never outlives it as a zombie of whoever adopts it. The test
// process makes itself a subreaper, so such a zombie would be its own, and visible.
func TestTeardownReapsTheChild(t *testing.T) {
	setSubreaper(t, 1)
	defer setSubreaper(t, 0)
	p, err := Start(Config{Spec: shell("exec sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	child := p.Pid()
	p.Close()
	p.Wait()
	if _, err := os.Stat("/proc/" + strconv.Itoa(child)); err == nil {
		var ws syscall.WaitStatus
		syscall.Wait4(child, &ws, 0, nil) // ours now: do not leave it behind
		t.Fatalf("child %d outlived its guardian (adopted by the test process, not reaped)", child)
	}
}

func setSubreaper(t *testing.T, on uintptr) {
	t.Helper()
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, on, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
}
