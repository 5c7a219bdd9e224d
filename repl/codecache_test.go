package repl

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A worker keeps its compiled code in the cache directory and a later worker loads
// it; a damaged, foreign-writable or stale entry never stops a worker from starting.
func TestWorkerCodeCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	start := func() {
		t.Helper()
		m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), PythonSource: "test", Project: t.TempDir(), Env: os.Environ(), Version: "test", CodeCache: cache})
		defer m.Close(time.Second)
		if res := m.Default().Execute(t.Context(), ExecRequest{Code: "6 * 7"}); !res.Success || string(res.Value) != "42" {
			why := ""
			if res.Error != nil {
				why = *res.Error
			}
			t.Fatalf("cell with cache %s: %s\n%+v", cache, why, res)
		}
	}
	entry := func() string {
		t.Helper()
		names, _ := filepath.Glob(filepath.Join(cache, "worker-*.code"))
		if len(names) != 1 {
			t.Fatalf("cache holds %v, want one worker entry", names)
		}
		return names[0]
	}

	start()
	path := entry()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache entry %v, %v: want a 0600 file", fi, err)
	}
	if fi, _ := os.Stat(cache); fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache directory mode %v, want 0700", fi.Mode().Perm())
	}
	good, _ := os.ReadFile(path)
	start() // loads it
	if entry() != path {
		t.Fatal("a second start replaced the entry")
	}

	os.WriteFile(path, []byte("not marshal data"), 0o600)
	start() // falls back to compiling and stores the code again
	if data, _ := os.ReadFile(entry()); string(data) == "not marshal data" || len(data) < len(good)/2 {
		t.Fatal("a damaged entry was not replaced")
	}

	os.Chmod(path, 0o666) // writable by others: never loaded
	start()

	// Writing an entry removes those of other workers for the same Python.
	stale := filepath.Join(cache, "worker-000000000000000000000000"+filepath.Base(path)[len("worker-")+24:])
	os.WriteFile(stale, good, 0o600)
	os.Remove(path)
	start()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("an entry of an older worker was kept")
	}
	entry()
}
