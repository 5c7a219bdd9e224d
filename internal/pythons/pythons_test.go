package pythons

import (
	"os/exec"
	"strings"
	"testing"
)

func TestAtLeast310(t *testing.T) {
	for v, want := range map[string]bool{"3.10.13": true, "3.9.18": false, "3.13.0": true, "3.14.0rc1": true, "2.7.18": false, "4.0": true, "x": false} {
		if got := atLeast310(v); got != want {
			t.Errorf("atLeast310(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestFindNamesEveryInterpreterOnce(t *testing.T) {
	found, missing := Find()
	for _, m := range missing {
		t.Logf("not used: %s", m)
	}
	if len(found) == 0 {
		t.Fatal("no CPython 3.10 or newer found")
	}
	seen := map[string]bool{}
	for _, py := range found {
		t.Logf("%s at %s", py.Name, py.Path)
		if seen[py.Name] {
			t.Errorf("%s listed twice", py.Name)
		}
		seen[py.Name] = true
	}
}

// TestDataVenvHasTheLibraries: the venv make data-deps builds imports every pinned
// library of real data work.
func TestDataVenvHasTheLibraries(t *testing.T) {
	python := DataVenv(t)
	out, err := exec.Command(python, "-c", "import pandas, numpy, matplotlib, PIL, tqdm, dask.distributed; print('ok')").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%s cannot import the data libraries: %v\n%s", python, err, out)
	}
}
