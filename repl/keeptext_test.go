package repl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/iota-uz/repl-mcp/internal/artifactref"
)

// keepingServices keep texts as a store would, numbering them, and say what each
// KeepText was given; a text is "gone" once its number is in gone.
type keepingServices struct {
	fakeServices
	calls []string
	gone  map[string]bool
}

func (k *keepingServices) KeepText(_ context.Context, sessionID, text string, kept *artifactref.Ref) (artifactref.Ref, error) {
	keptID := ""
	if kept != nil {
		keptID = kept.ID
	}
	k.calls = append(k.calls, fmt.Sprintf("%s kept=%s", text, keptID))
	if keptID != "" && !k.gone[keptID] {
		return *kept, nil
	}
	return artifactref.Ref{ID: fmt.Sprintf("T%d", len(k.calls))}, nil
}

// TestKeepTextOncePerRun: a result's complete text is kept once, by the session,
// and every read of the run (the copies python_run makes) names that artifact
// while the store still holds it; another tool's text is kept afresh each time.
func TestKeepTextOncePerRun(t *testing.T) {
	services := &keepingServices{fakeServices: fakeServices{seen: make(chan RPC, 1), events: make(chan string, 16)}, gone: map[string]bool{}}
	m := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), Project: t.TempDir(), Env: os.Environ(), Services: services})
	defer m.Close(time.Second)
	sess := m.Default()
	// A run refused before any worker: a result the session made, with no Python.
	res := sess.Execute(t.Context(), ExecRequest{Code: strings.Repeat("x", MaxCodeBytes+1)})
	if res.Success || res.RunID == "" {
		t.Fatalf("want a refused run, got %+v", res)
	}
	first, err := sess.KeepText(t.Context(), res, "all of it")
	if err != nil || first.ID != "T1" {
		t.Fatalf("first keep: %+v, %v", first, err)
	}
	zero := int64(0)
	copied, err := res.From(Offsets{Stdout: &zero, Stderr: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := sess.KeepText(t.Context(), copied, "all of it"); again != first {
		t.Errorf("a read of the same run kept %+v, want %+v", again, first)
	}
	services.gone["T1"] = true // deleted, say, with artifact_delete
	remade, _ := sess.KeepText(t.Context(), res, "all of it")
	if remade == first {
		t.Errorf("a kept text that is gone was named again: %+v", remade)
	}
	if again, _ := sess.KeepText(t.Context(), copied, "all of it"); again != remade {
		t.Errorf("after the text was kept again a copy names %+v, want %+v", again, remade)
	}
	other, _ := sess.KeepText(t.Context(), nil, "a tool's text")
	if !strings.HasSuffix(services.calls[len(services.calls)-1], "kept=") || other == remade {
		t.Errorf("another tool's text: %+v, calls %q", other, services.calls)
	}

	// A session without services has nowhere to keep it, and says so.
	bare := NewManager(t.Context(), Config{OpLimits: testOps, Python: realPython(t), Project: t.TempDir(), Env: os.Environ()})
	defer bare.Close(time.Second)
	if _, err := bare.Default().KeepText(t.Context(), nil, "x"); !errors.Is(err, errNoTextStore) {
		t.Errorf("no services: %v", err)
	}
}
