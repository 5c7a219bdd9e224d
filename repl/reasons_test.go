package repl

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// TestReasonTableComplete walks the reason table: every code declared in reasons.go
// is listed by Reasons and has a row, and every row says what happened, what it means
// for the variables, which words its error holds (unless the worker's own report is
// the error), and is consistent: a reason that clears the variables by saying so has
// an effect that clears them.
func TestReasonTableComplete(t *testing.T) {
	declared := declaredReasons(t)
	if !slices.Equal(declared, Reasons()) {
		t.Fatalf("Reasons() = %v, but reasons.go declares %v, in that order", Reasons(), declared)
	}
	if len(reasons) != len(declared) {
		t.Fatalf("the table has %d rows for %d codes", len(reasons), len(declared))
	}
	effects := []Effect{Untouched, Kept, KeptUnlessStuck, Cleared, Replaced}
	for _, r := range Reasons() {
		e, ok := reasons[r]
		switch {
		case !ok:
			t.Errorf("%s: no row", r)
		case e.meaning == "":
			t.Errorf("%s: no meaning", r)
		case !slices.Contains(effects, e.effect):
			t.Errorf("%s: effect %q is none of %v", r, e.effect, effects)
		case e.text == "" && r != ReasonRaised:
			t.Errorf("%s: no text, and only the worker's report (raised) has none", r)
		case e.saysCleared && e.effect != Cleared && e.effect != KeptUnlessStuck:
			t.Errorf("%s: says the variables were cleared, but its effect (%s) never clears them", r, e.effect)
		}
	}
	if ReasonStale.state() != StatePreserved || ReasonCrashed.state() != StateCleared || ReasonTimeout.state() != StatePreserved {
		t.Fatal("a reason's state is not its effect's")
	}
}

// declaredReasons are the Reason constants of reasons.go, in order.
func declaredReasons(t *testing.T) []Reason {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []Reason
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for i, name := range v.Names {
				if id, ok := v.Type.(*ast.Ident); ok && id.Name == "Reason" || strings.HasPrefix(name.Name, "Reason") {
					lit := v.Values[i].(*ast.BasicLit)
					names = append(names, Reason(strings.Trim(lit.Value, `"`)))
				}
			}
		}
	}
	return names
}

// checkReason fails t unless a failed result's reason is set and agrees with the
// result: its error holds the reason's words, and its state is the one the reason
// leaves (a fresh run's is always preserved).
func checkReason(t *testing.T, res *Result) {
	t.Helper()
	if res.Success {
		if res.Reason != "" {
			t.Fatalf("a successful result has reason %q", res.Reason)
		}
		return
	}
	e, ok := reasons[res.Reason]
	if !ok {
		t.Fatalf("a failed result has reason %q, which is no code (error %q)", res.Reason, errorOf(res))
	}
	if !strings.Contains(errorOf(res), e.text) {
		t.Fatalf("reason %s: the error does not hold %q: %q", res.Reason, e.text, errorOf(res))
	}
	want := []State{StatePreserved}
	switch {
	case res.ExecutionMode == "fresh":
	case e.effect == Cleared:
		want = []State{StateCleared}
	case e.effect == KeptUnlessStuck:
		want = append(want, StateCleared)
	}
	if !slices.Contains(want, res.State) {
		t.Fatalf("reason %s (%s) left state %s (error %q)", res.Reason, e.effect, res.State, errorOf(res))
	}
	if res.State == StateCleared && e.saysCleared && !strings.Contains(errorOf(res), msgVariablesCleared) {
		t.Fatalf("reason %s says the variables were cleared, but the error does not: %q", res.Reason, errorOf(res))
	}
}

// mustFailFor is mustFail for a result that must have failed for reason.
func mustFailFor(t *testing.T, res *Result, reason Reason, want string, state State) {
	t.Helper()
	mustFail(t, res, want, state)
	if res.Reason != reason {
		t.Fatalf("reason = %q, want %q (error %q)", res.Reason, reason, errorOf(res))
	}
}

// TestStopOfIsTheReasonTables: what the notebook says stopped a run is its reason's
// stop, whatever its error's words.
func TestStopOfIsTheReasonTables(t *testing.T) {
	for _, c := range []struct {
		reason Reason
		want   StopKind
	}{
		{ReasonTimeout, StopTimeout}, {ReasonCancelled, StopCancel}, {ReasonNotDispatched, StopCancel},
		{ReasonCrashed, StopLost}, {ReasonMemory, StopLost}, {ReasonAbandoned, StopLost},
		{ReasonRaised, ""}, {ReasonBusy, ""}, {ReasonStartFailed, ""},
	} {
		// Words that would have read as another stop once.
		res := failure("R", c.reason, "Execution cancelled; Python worker crashed")
		if got := stopOf(res); got != c.want {
			t.Errorf("%s: stop %q, want %q", c.reason, got, c.want)
		}
	}
}

func errorOf(res *Result) string {
	if res.Error == nil {
		return ""
	}
	return *res.Error
}
