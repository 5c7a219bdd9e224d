package guardian

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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
	return descendant(t, "sleep 60 & echo $! >&3; wait")
}

// descendant starts a child running script, which reports a descendant's pid on fd 3.
func descendant(t *testing.T, script string) (*Process, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := Start(Config{Spec: shell(script), ExtraFiles: []*os.File{w}})
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
	server, said := startHelperServer(t, "TestHelperServer")
	pid, err := strconv.Atoi(said)
	if err != nil {
		t.Fatalf("helper server said %q", said)
	}
	server.Process.Kill()
	server.Wait()
	waitGone(t, pid, 2*time.Second)
}

// startHelperServer starts a stand-in server, this test binary running only the
// helper test named with env added to its environment, and returns it with the first
// line it wrote. The test kills it, so it must leave nothing of its own behind (no
// t.TempDir: what it needs, the test passes).
func startHelperServer(t *testing.T, helper string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+helper+"$")
	cmd.Env = append(append(os.Environ(), "GUARDIAN_HELPER_SERVER=1"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	out.(*os.File).SetReadDeadline(time.Now().Add(testwait.Bound(t, 10*time.Second)))
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper server %s wrote %q: %v", helper, line, err)
	}
	return cmd, strings.TrimSuffix(line, "\n")
}

// helperServer reports whether the test runs as a stand-in server (startHelperServer).
func helperServer() bool { return os.Getenv("GUARDIAN_HELPER_SERVER") == "1" }

func TestHelperServer(t *testing.T) {
	if !helperServer() {
		return
	}
	_, gc := grandchild(t)
	os.Stdout.WriteString(strconv.Itoa(gc) + "\n")
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

// TestChildLeadsItsGroup: the child leads a process group of its own, so setsid fails
// in it (EPERM) and it cannot take itself out of the group that is killed; signals
// reach that group.
func TestChildLeadsItsGroup(t *testing.T) {
	p, gc := grandchild(t)
	defer p.Stop(time.Second)
	pgid, err := syscall.Getpgid(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != p.Pid() {
		t.Fatalf("child %d is in process group %d (the guardian's is %d), want a group of its own", p.Pid(), pgid, p.Group())
	}
	if gcGroup, _ := syscall.Getpgid(gc); gcGroup != pgid {
		t.Fatalf("grandchild in group %d, want the child's %d", gcGroup, pgid)
	}
}

// TestAdoptedOrphanDiesAtTeardown: a double fork with setsid leaves an orphan in a
// session of its own; the guardian adopts it (a child subreaper) and kills it when the
// group goes.
func TestAdoptedOrphanDiesAtTeardown(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has child subreapers; docs/contract.md §5.9 says what escapes elsewhere")
	}
	p, orphan := descendant(t, `(setsid sh -c 'sleep 60 & echo $! >&3' &); exec sleep 60`)
	if pgid, _ := syscall.Getpgid(orphan); pgid == p.Group() || pgid == p.Pid() {
		t.Fatalf("orphan %d stayed in group %d, which the guardian kills anyway", orphan, pgid)
	}
	p.Close()
	p.Wait()
	waitGone(t, orphan, 2*time.Second)
}
