package guardian

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testwait"
	"github.com/iota-uz/repl-mcp/sandbox"
)

// TestSandboxedChild: a child started with a policy writes only in its root and in
// the private $TMPDIR the guardian made for it, a grandchild it starts is held to
// the same, the server learns the temp directory, and the directory is gone once the
// child is; a child of the same guardian binary without a policy is unrestricted.
func TestSandboxedChild(t *testing.T) {
	requireSandbox(t)
	root, outside := t.TempDir(), t.TempDir()
	report := filepath.Join(root, "report")
	spec := shell(`echo "$TMPDIR" > ` + report + `
echo in > "$TMPDIR/in" && echo tmp-ok >> ` + report + `
echo x > ` + outside + `/direct 2>/dev/null || echo direct-refused >> ` + report + `
sh -c 'echo x > ` + outside + `/grandchild' 2>/dev/null || echo grandchild-refused >> ` + report)
	spec.Sandbox = &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: append([]string{root}, sandbox.SystemWritable...)}
	p, err := Start(Config{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	tmp := p.TempDir()
	if tmp == "" || !strings.Contains(filepath.Base(tmp), "repl-mcp-worker-") {
		t.Fatalf("temp dir %q", tmp)
	}
	select {
	case <-p.Exited():
	case <-time.After(testwait.Bound(t, 10*time.Second)):
		t.Fatal("the sandboxed child did not finish")
	}
	p.Close()
	p.Wait()
	data, _ := os.ReadFile(report)
	want := tmp + "\ntmp-ok\ndirect-refused\ngrandchild-refused\n"
	if string(data) != want {
		t.Errorf("the child reported %q, want %q", data, want)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the child wrote outside its roots: %v", entries)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temp directory outlived the child: %v", err)
	}

	free := filepath.Join(outside, "free")
	q, err := Start(Config{Spec: shell("echo x > " + free)})
	if err != nil {
		t.Fatal(err)
	}
	<-q.Exited()
	q.Close()
	q.Wait()
	if _, err := os.Stat(free); err != nil || q.TempDir() != "" {
		t.Errorf("a child without a policy was restricted: %v, temp %q", err, q.TempDir())
	}
}

// TestSandboxedTempDirGoesWithAKilledServer: a server SIGKILLed cannot remove its
// sandboxed worker's temp directory; the guardian's teardown does, the directory
// itself included (its parent is outside the sandbox the guardian applied to its
// own thread).
func TestSandboxedTempDirGoesWithAKilledServer(t *testing.T) {
	requireSandbox(t)
	server, tmp := startHelperServer(t, "TestHelperSandboxedServer", "GUARDIAN_HELPER_ROOT="+t.TempDir())
	if !strings.Contains(filepath.Base(tmp), "repl-mcp-worker-") {
		t.Fatalf("helper server said %q, want the temp directory", tmp)
	}
	if _, err := os.Stat(filepath.Join(tmp, "in")); err != nil {
		t.Fatalf("the child's file in its temp directory: %v", err)
	}
	server.Process.Kill()
	server.Wait()
	testwait.Until(t, 5*time.Second, "the temp directory "+tmp+" to be gone", func() bool {
		_, err := os.Stat(tmp)
		return os.IsNotExist(err)
	})
}

func TestHelperSandboxedServer(t *testing.T) {
	if !helperServer() {
		return
	}
	spec := shell(`echo in > "$TMPDIR/in" && echo ready && exec sleep 60`)
	root := os.Getenv("GUARDIAN_HELPER_ROOT")
	spec.Sandbox = &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: append([]string{root}, sandbox.SystemWritable...)}
	out, in, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Config{Spec: spec, Stdout: in})
	in.Close()
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the sandboxed child wrote %q: %v", line, err)
	}
	os.Stdout.WriteString(p.TempDir() + "\n")
	time.Sleep(time.Minute)
}

// requireSandbox fails the test on a kernel without Landlock and seccomp.
func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := sandbox.HostKernel().Check(sandbox.WorkspaceWrite, &sandbox.Policy{Mode: sandbox.WorkspaceWrite}); err != nil {
		t.Fatalf("this test needs a kernel with Landlock and seccomp: %v", err)
	}
}

// TestSandboxRefusedStartsNothing: a policy the guardian cannot apply (a writable
// root it cannot look at) starts no child and says why: never a child without its
// sandbox.
func TestSandboxRefusedStartsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	spec := shell("echo x > " + marker)
	spec.Sandbox = &sandbox.Policy{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{"/proc/self/\x00bad"}}
	if _, err := Start(Config{Spec: spec}); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("start = %v, want a sandbox error", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the child ran anyway: %v", err)
	}
}
