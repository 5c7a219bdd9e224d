package guardian

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// TestMain lets the test binary serve as the guardian it tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Flag {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

func shell(script string) Spec {
	return Spec{Program: "/bin/sh", Args: []string{"-c", script}, Env: os.Environ()}
}

// waitGone waits until pid no longer exists (or is a zombie nobody reaps).
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	testwait.Until(t, within, fmt.Sprintf("pid %d to be gone", pid), func() bool { return !alive(pid) })
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // not Linux: trust kill(0)
	}
	fields := strings.Fields(string(stat))
	return len(fields) < 3 || fields[2] != "Z"
}

// grandchild starts a child that starts an ordinary grandchild and reports its pid.
func grandchild(t *testing.T) (*Process, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := Start(Config{Spec: shell("sleep 60 & echo $! >&3; wait"), ExtraFiles: []*os.File{w}})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := r.Read(buf)
	if err != nil {
		t.Fatalf("read grandchild pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatal(err)
	}
	return p, pid
}

func TestCloseKillsTheWholeGroup(t *testing.T) {
	p, gc := grandchild(t)
	if !alive(p.Pid()) || !alive(gc) {
		t.Fatal("child or grandchild not running")
	}
	p.Close()
	if err := p.Wait(); err == nil {
		t.Log("guardian exited cleanly")
	}
	waitGone(t, p.Pid(), 2*time.Second)
	waitGone(t, gc, 2*time.Second)
}

func TestChildExitIsReportedAndGroupKilled(t *testing.T) {
	p, err := Start(Config{Spec: shell("(sleep 60 &); exit 3")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("exit not reported")
	}
	if got := p.ExitStatus(); got.Code != 3 {
		t.Fatalf("exit = %v, want status 3", got)
	}
	p.Wait()
}

// TestSignalDeathNamesTheSignal: a child killed by a signal reads "killed by
// SIGKILL", the name a person looks up, not Go's description ("killed").
func TestSignalDeathNamesTheSignal(t *testing.T) {
	p, err := Start(Config{Spec: shell("kill -KILL $$")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("exit not reported")
	}
	if got := p.ExitStatus().String(); got != "killed by SIGKILL" {
		t.Fatalf("exit = %q, want %q", got, "killed by SIGKILL")
	}
	p.Wait()
}

func TestSignalReachesTheGroup(t *testing.T) {
	p, gc := grandchild(t)
	defer p.Stop(time.Second)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gc, 2*time.Second)
}

func TestStartFailureIsReported(t *testing.T) {
	_, err := Start(Config{Spec: Spec{Program: "/nonexistent/python", Env: os.Environ()}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/python") {
		t.Fatalf("err = %v", err)
	}
}

// TestServerDeathKillsTheGroup SIGKILLs a stand-in server (a shell that started the
// guardian) and checks that the guardian's child dies with it.
func TestServerDeathKillsTheGroup(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in "server" is this test binary in helper mode.
	cmd := exec.Command(exe, "-test.run=^TestHelperServer$")
	cmd.Env = append(os.Environ(), "GUARDIAN_HELPER_SERVER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("helper server said %q", buf[:n])
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, pid, 2*time.Second)
}

func TestHelperServer(t *testing.T) {
	if os.Getenv("GUARDIAN_HELPER_SERVER") != "1" {
		return
	}
	p, gc := grandchild(t)
	os.Stdout.WriteString(strconv.Itoa(gc) + "\n")
	_ = p
	time.Sleep(time.Minute)
}

// TestLargeSpec: the spec carries a worker's whole source; it must not be bounded by a
// small read buffer.
func TestLargeSpec(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	p, err := Start(Config{Spec: Spec{Program: "/bin/sh", Args: []string{"-c", "exit 0", big}, Env: os.Environ()}})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if got := p.ExitStatus(); got.Code != 0 {
		t.Fatalf("exit = %v", got)
	}
	p.Wait()
}

// TestStdinAndStdout: a downstream server talks over its own stdin and stdout, with
// stderr kept apart.
func TestStdinAndStdout(t *testing.T) {
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	p, err := Start(Config{Spec: shell("read line; echo got:$line; echo noise >&2"), Stdin: inR, Stdout: outW})
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	inW.WriteString("hello\n")
	inW.Close()
	outR.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, err := outR.Read(buf)
	if err != nil || string(buf[:n]) != "got:hello\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
}
