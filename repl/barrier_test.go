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
