package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A cell that closes fd 2 and opens a file there: the barrier never goes into that file,
// native output still lands in the run's stderr in order, and later runs do not wait out
// the barrier (which the worker still writes to its own copy of the pipe).
func TestBarrierSurvivesAClosedFd2(t *testing.T) {
	m := newTestManager(t, realPython(t))
	took := filepath.Join(t.TempDir(), "took-fd2")
	s := m.Default()
	res := s.Execute(t.Context(), ExecRequest{Code: "import os\nos.close(2)\nf = open(" + pyQuote(took) + ", 'w', buffering=1)\nf.fileno()"})
	if !res.Success || string(res.Value) != "2" {
		t.Fatalf("the file did not take fd 2: %+v", res)
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		res := s.Execute(t.Context(), ExecRequest{Code: "os.write(1, b'native one\\n')\nprint('python')\nos.write(1, b'native two\\n')"})
		took := time.Since(start)
		if !res.Success || res.Stdout != "python\n" || res.Stderr != "native one\nnative two\n" {
			t.Fatalf("run %d: %+v", i, res)
		}
		if took >= barrierWait {
			t.Fatalf("run %d took %v: it waited out the barrier", i, took)
		}
	}
	if res := s.Execute(t.Context(), ExecRequest{Code: "f.close()"}); !res.Success {
		t.Fatalf("%+v", res)
	}
	data, err := os.ReadFile(took)
	if err != nil || strings.Contains(string(data), "\x1e") {
		t.Fatalf("the file that took fd 2 holds %q (%v)", data, err)
	}
}

func pyQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// The worker writes no barrier when the native pipe holds nothing unread (PROTOCOL.md,
// The barrier): output the server had already read when the cell ended, the worker's
// own and a child's, is still the run's, in order; output still in the pipe at the end
// comes after a barrier and is the run's too.
func TestNativeOutputWithAndWithoutBarrier(t *testing.T) {
	m := newTestManager(t, realPython(t))
	s := m.Default()
	drained := "import fcntl, os, subprocess, termios, time\n" +
		"os.write(1, b'native early\\n')\n" +
		"subprocess.run(['echo', 'child early'], check=True)\n" +
		"deadline = time.monotonic() + 10\n" +
		"while fcntl.ioctl(1, termios.FIONREAD, bytes(4)) != bytes(4) and time.monotonic() < deadline:\n" +
		"    time.sleep(0.005)\n" +
		"print('python')\n"
	for i := 0; i < 3; i++ {
		res := s.Execute(t.Context(), ExecRequest{Code: drained})
		if !res.Success || res.Stdout != "python\n" || res.Stderr != "native early\nchild early\n" {
			t.Fatalf("run %d, drained before the result: %+v", i, res)
		}
		res = s.Execute(t.Context(), ExecRequest{Code: "os.write(2, b'native late\\n')\nsubprocess.run(['echo', 'child late'], check=True)\nprint('python')"})
		if !res.Success || res.Stdout != "python\n" || res.Stderr != "native late\nchild late\n" {
			t.Fatalf("run %d, written just before the result: %+v", i, res)
		}
		res = s.Execute(t.Context(), ExecRequest{Code: "print('python only')"})
		if !res.Success || res.Stdout != "python only\n" || res.Stderr != "" {
			t.Fatalf("run %d, no native output: %+v", i, res)
		}
	}
}
