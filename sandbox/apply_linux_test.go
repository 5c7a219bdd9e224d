package sandbox

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// childPolicyEnv makes the test binary a sandboxed launcher (TestMain): it applies
// the policy in the variable to its locked thread, as the guardian does, and runs
// its arguments after "--" there.
const childPolicyEnv = "REPL_MCP_SANDBOX_TEST_POLICY"

func TestMain(m *testing.M) {
	if raw := os.Getenv(childPolicyEnv); raw != "" {
		os.Exit(sandboxedChild(raw))
	}
	os.Exit(m.Run())
}

func sandboxedChild(raw string) int {
	runtime.LockOSThread() // never unlocked: the thread carries the sandbox
	var p Policy
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		fmt.Fprintln(os.Stderr, "bad policy:", err)
		return 90
	}
	if _, err := ApplyToThread(&p, HostKernel()); err != nil {
		fmt.Fprintln(os.Stderr, "apply:", err)
		return 91
	}
	args := os.Args[len(os.Args)-1:]
	for i, a := range os.Args {
		if a == "--" {
			args = os.Args[i+1:]
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "run:", err)
		return 92
	}
	return 0
}

// probeScript tries each thing a cell might do and prints, per thing, "ok" or the
// exception's type and errno.
const probeScript = `
import json, os, socket, subprocess, sys
root, outside, port, proxy = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = {}
def attempt(name, f):
    try:
        f()
        out[name] = "ok"
    except OSError as e:
        out[name] = "%s %s" % (type(e).__name__, e.errno)
    except Exception as e:
        out[name] = type(e).__name__
def write(path):
    with open(path, "w") as f:
        f.write("x")
def connect(p):
    with socket.create_connection(("127.0.0.1", p), timeout=5):
        pass
def listen():
    s = socket.socket(); s.listen(); s.close()
attempt("write_root", lambda: write(os.path.join(root, "in.txt")))
attempt("mkdir_rename_root", lambda: (os.makedirs(os.path.join(root, "d"), exist_ok=True), os.rename(os.path.join(root, "in.txt"), os.path.join(root, "d", "moved.txt"))))
attempt("write_outside", lambda: write(os.path.join(outside, "out.txt")))
attempt("truncate_outside", lambda: os.truncate(os.path.join(outside, "existing.txt"), 0))
attempt("unlink_outside", lambda: os.unlink(os.path.join(outside, "existing.txt")))
attempt("dev_null", lambda: write("/dev/null"))
attempt("shell_outside", lambda: subprocess.run(["sh", "-c", "echo x > " + os.path.join(outside, "sh.txt")], check=True, stderr=subprocess.DEVNULL))
attempt("connect_loopback", lambda: connect(port))
attempt("connect_proxy", lambda: connect(proxy) if proxy else None)
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close())
attempt("unix", lambda: socket.socket(socket.AF_UNIX).close())
attempt("socketpair", lambda: [s.close() for s in socket.socketpair()])
attempt("listen", listen)
attempt("signal_parent", lambda: os.kill(int(sys.argv[5]), 0))
print(json.dumps(out))
`

// runSandboxed runs probeScript on python3 under p and returns what it printed.
func runSandboxed(t *testing.T, p *Policy, root, outside string, port, proxy int) map[string]string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed: %v", err)
	}
	raw, _ := json.Marshal(p)
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", python, "-c", probeScript, root, outside,
		strconv.Itoa(port), strconv.Itoa(proxy), strconv.Itoa(os.Getpid()))
	cmd.Env = append(os.Environ(), childPolicyEnv+"="+string(raw))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sandboxed probe: %v\n%s", err, errText(err))
	}
	got := map[string]string{}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("probe printed %q: %v", out, err)
	}
	return got
}

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// listener is a loopback TCP server that accepts and closes, standing in for any
// local service.
func listener(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestApplyToThread runs real Python under each policy on this kernel: writes land
// only beneath the writable roots (the cell, a shell it starts, a rename inside a
// root), TCP reaches only the proxy's port, and UDP, new Unix sockets, listen and
// signals outside the sandbox are refused; an unrestricted network is left alone.
func TestApplyToThread(t *testing.T) {
	k := HostKernel()
	if _, err := k.Check(WorkspaceWrite, &Policy{Mode: WorkspaceWrite}); err != nil {
		t.Fatalf("this test needs a kernel with Landlock and seccomp: %v", err)
	}
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "existing.txt"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	service, proxy := listener(t), listener(t)
	refused := "PermissionError 13"
	cases := []struct {
		name   string
		policy *Policy
		want   map[string]string
	}{
		{"workspace-write with a proxy", &Policy{Mode: WorkspaceWrite, WritableRoots: append([]string{root}, SystemWritable...), ProxyPort: proxy}, map[string]string{
			"write_root": "ok", "mkdir_rename_root": "ok", "write_outside": refused, "truncate_outside": refused,
			"unlink_outside": refused, "dev_null": "ok", "shell_outside": "CalledProcessError", "connect_loopback": refused,
			"connect_proxy": "ok", "udp": refused, "unix": refused, "socketpair": "ok", "listen": refused,
		}},
		{"read-only, network off", &Policy{Mode: ReadOnly, WritableRoots: SystemWritable}, map[string]string{
			"write_root": refused, "write_outside": refused, "dev_null": "ok", "connect_loopback": refused,
			"connect_proxy": "ok", // no proxy given: nothing to connect to
			"udp":           refused, "unix": refused, "socketpair": "ok",
		}},
		{"network unrestricted", &Policy{Mode: WorkspaceWrite, WritableRoots: []string{root}, Network: true}, map[string]string{
			"write_root": "ok", "write_outside": refused, "connect_loopback": "ok", "udp": "ok", "unix": "ok",
		}},
	}
	if k.LandlockABI >= 6 {
		cases[0].want["signal_parent"] = "PermissionError" // EPERM
		cases[1].want["signal_parent"] = "PermissionError"
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			port := 0
			if c.policy.ProxyPort != 0 {
				port = proxy
			}
			got := runSandboxed(t, c.policy, root, outside, service, port)
			for k, want := range c.want {
				if g := got[k]; !strings.HasPrefix(g, want) {
					t.Errorf("%s: got %q, want %q", k, g, want)
				}
			}
		})
	}
	data, err := os.ReadFile(filepath.Join(outside, "existing.txt"))
	if err != nil || string(data) != "keep" {
		t.Errorf("the file outside the roots was changed: %q, %v", data, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files appeared outside the roots: %v", entries)
	}
}
