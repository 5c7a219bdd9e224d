package guardian

import (
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
	if _, err := sandbox.HostKernel().Check(sandbox.WorkspaceWrite, &sandbox.Policy{Mode: sandbox.WorkspaceWrite}); err != nil {
		t.Fatalf("this test needs a kernel with Landlock and seccomp: %v", err)
	}
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
