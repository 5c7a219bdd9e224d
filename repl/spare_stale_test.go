package repl

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/testproc"
	"github.com/iota-uz/repl-mcp/internal/testwait"
)

// The cases the spare's staleness check missed (issue 37, point 5), each with real
// Python: a reset after the change must run on a worker that sees it, never on the
// spare that waited through it, and that spare is stopped.

// staleManager is a manager of python in a project of its own, with env added to the
// workers' environment; it returns the manager's default session.
func staleManager(t *testing.T, python, project string, env ...string) *Session {
	t.Helper()
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: python, PythonSource: "test", Project: project, Env: append(os.Environ(), env...), Version: "test"})
	t.Cleanup(func() { m.Close(time.Second) })
	return m.Default()
}

// spareAfterFirstCell runs a first cell and waits for the spare beside it: (first, spare).
func spareAfterFirstCell(t *testing.T, s *Session) (int, int) {
	t.Helper()
	first, _ := workerPid(t, s, ExecRequest{})
	return first, waitForSpare(t, s, first)
}

// resetNotOnSpare runs code with reset=true, which must succeed on neither first nor
// spare, with the generation one up; the spare must be stopped. It returns the value.
func resetNotOnSpare(t *testing.T, s *Session, first, spare int, code string) string {
	t.Helper()
	res := s.Execute(t.Context(), ExecRequest{Reset: true, Timeout: 20 * time.Second, Code: "import os\n" + code + "\n(os.getpid(), result)"})
	if !res.Success {
		t.Fatalf("the reset after the change failed: %v", *res.Error)
	}
	value := string(res.Value)
	pid, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(value, ",", 2)[0], "["))
	if pid == spare || pid == first || res.Generation != 2 {
		t.Fatalf("the reset ran on %d (generation %d); the first worker was %d, the stale spare %d: %s", pid, res.Generation, first, spare, value)
	}
	testwait.Until(t, 10*time.Second, "the stale spare to be stopped", func() bool { return !processAlive(spare) })
	return value
}

// TestSpareStaleOnceUserSitePackagesAppear: `pip install --user` on an interpreter
// that is no venv makes the user site-packages; a spare started before it has no
// such entry on sys.path, and the first reset got ModuleNotFoundError.
func TestSpareStaleOnceUserSitePackagesAppear(t *testing.T) {
	python := realPython(t)
	base := t.TempDir()
	out, _, err := testproc.Run(t.Context(), "", []string{"PYTHONUSERBASE=" + base}, python, "-c", "import site; print(site.ENABLE_USER_SITE, site.getusersitepackages())")
	fields := strings.Fields(string(out))
	if err != nil || len(fields) != 2 || fields[0] != "True" {
		t.Fatalf("%s has no user site-packages to test with: %v %q", python, err, out)
	}
	s := staleManager(t, python, t.TempDir(), "PYTHONUSERBASE="+base)
	first, spare := spareAfterFirstCell(t, s)
	if err := os.MkdirAll(fields[1], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fields[1], "usermod.py"), []byte("VALUE = 'user'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := resetNotOnSpare(t, s, first, spare, "import usermod; result = usermod.VALUE"); !strings.Contains(got, `"user"`) {
		t.Fatalf("the reset's value: %s", got)
	}
}

// TestSpareStaleOnceAStartFileIsEditedInPlace: a .pth file or sitecustomize.py
// rewritten in place leaves its directory's time as it was; a spare started before
// it ran the old one.
func TestSpareStaleOnceAStartFileIsEditedInPlace(t *testing.T) {
	for _, file := range []string{"extra.pth", "sitecustomize.py"} {
		t.Run(file, func(t *testing.T) {
			venv := filepath.Join(t.TempDir(), "venv")
			if _, stderr, err := testproc.Run(t.Context(), "", nil, realPython(t), "-m", "venv", "--without-pip", venv); err != nil {
				t.Fatalf("make a venv: %v: %s", err, stderr)
			}
			sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
			if len(sites) != 1 {
				t.Fatalf("site-packages of the venv: %v", sites)
			}
			modules := t.TempDir()
			if err := os.WriteFile(filepath.Join(modules, "pthmod.py"), []byte("VALUE = 'pth'\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(sites[0], file)
			before, after := "\n", modules+"\n"
			if file == "sitecustomize.py" {
				before, after = "import builtins; builtins.MARK = 'old'\n", "import builtins; builtins.MARK = 'new'\n"
			}
			if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			// The venv was just made: date it back, or every spare is stale.
			past := time.Now().Add(-time.Hour)
			for _, p := range []string{path, sites[0], filepath.Dir(sites[0]), venv} {
				if err := os.Chtimes(p, past, past); err != nil {
					t.Fatal(err)
				}
			}
			s := staleManager(t, filepath.Join(venv, "bin", "python"), t.TempDir())
			first, spare := spareAfterFirstCell(t, s)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(after)
			f.Close()
			if err := os.Chtimes(sites[0], past, past); err != nil { // as an edit in place leaves it
				t.Fatal(err)
			}
			code, want := "import pthmod; result = pthmod.VALUE", `"pth"`
			if file == "sitecustomize.py" {
				code, want = "import builtins; result = builtins.MARK", `"new"`
			}
			if got := resetNotOnSpare(t, s, first, spare, code); !strings.Contains(got, want) {
				t.Fatalf("the reset's value: %s, want %s in it", got, want)
			}
		})
	}
}

// TestSpareStaleOnceTheProjectIsMadeAnew: a project directory removed and made again
// (a checkout switched, a directory restored) left the spare in the old one: its cwd
// gone, the project's modules out of its reach.
func TestSpareStaleOnceTheProjectIsMadeAnew(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	s := staleManager(t, realPython(t), project)
	first, spare := spareAfterFirstCell(t, s)
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "projmod.py"), []byte("VALUE = 'project'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := resetNotOnSpare(t, s, first, spare, "import projmod; result = (projmod.VALUE, os.getcwd())")
	if want := fmt.Sprintf(`"project",%q`, project); !strings.Contains(strings.ReplaceAll(got, " ", ""), want) {
		t.Fatalf("the reset's value: %s, want %s in it", got, want)
	}
}

// TestStoppedSpareIsNotHandedOut: a spare stopped by SIGSTOP was handed out, and the
// reset's cell timed out on it.
func TestStoppedSpareIsNotHandedOut(t *testing.T) {
	s := staleManager(t, realPython(t), t.TempDir())
	first, spare := spareAfterFirstCell(t, s)
	if err := syscall.Kill(spare, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the spare to stop", func() bool { return stopped(spare) })
	resetNotOnSpare(t, s, first, spare, "result = 1")
}

// TestSpareThatSpokeIsNotHandedOut: a spare's pipes are within reach of any cell
// (/proc/<pid>/fd); one that sent a frame before a session claimed it was handed out.
// Here the test writes an output frame into every pipe the spare writes to, as a cell
// could; the reset then runs on a worker of its own.
func TestSpareThatSpokeIsNotHandedOut(t *testing.T) {
	s := staleManager(t, realPython(t), t.TempDir())
	first, spare := spareAfterFirstCell(t, s)
	frame := []byte(`{"type":"output","id":"x","stream":"stdout","text":"injected"}` + "\n")
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", spare))
	written := 0
	for _, fd := range fds {
		link, _ := os.Readlink(fd)
		info, _ := os.ReadFile(strings.Replace(fd, "/fd/", "/fdinfo/", 1))
		flags := ""
		for line := range strings.SplitSeq(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags = strings.TrimSpace(v)
			}
		}
		mode, _ := strconv.ParseUint(flags, 8, 64)
		if !strings.HasPrefix(link, "pipe:") || mode&syscall.O_ACCMODE != syscall.O_WRONLY {
			continue
		}
		f, err := os.OpenFile(fd, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if _, err := f.Write(frame); err == nil {
			written++
		}
		f.Close()
	}
	if written == 0 {
		t.Fatalf("no pipe of the spare %d to write to: %v", spare, fds)
	}
	// Once the server has read the frame, health no longer calls the spare ready.
	testwait.Until(t, 10*time.Second, "the spare that spoke to be no longer ready", func() bool {
		h := s.Health().Spare
		return !h.Ready || h.Pid != spare
	})
	resetNotOnSpare(t, s, first, spare, "result = 1")
}
