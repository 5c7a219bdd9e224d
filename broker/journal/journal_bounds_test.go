// The journal's bounds: records loaded, records and bytes kept with oldest-first
// eviction, string lengths, and Finish's errors.

package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJournalLoadRecordLimit(t *testing.T) {
	var lines []string
	for i := range maxRecords + 1 {
		lines = append(lines, journalRecordLine(t, Record{ID: fmt.Sprintf("%d-x", i), Server: "s", Tool: "t", Status: StatusCompleted}))
	}
	path := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(path, []byte("[\n"+strings.Join(lines, ",\n")+"\n]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Path: path}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("257 records: %v", err)
	}
}

func TestJournalRecordBoundAndEviction(t *testing.T) {
	j := openTestJournal(t, "")
	defer j.Close()
	ctx := t.Context()
	var ids []string
	for i := range maxRecords {
		id, err := j.Dispatch(ctx, journalTestMeta(i))
		if err != nil {
			t.Fatalf("dispatch %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	if _, err := j.Dispatch(ctx, journalTestMeta(999)); !errors.Is(err, ErrFull) ||
		err.Error() != "Effect journal has 256 in-flight calls; finish or cancel one before dispatching another" {
		t.Fatalf("257th in-flight dispatch: %v", err)
	}
	// Finish records 10..19; the next ten dispatches evict exactly those,
	// oldest first, never an in-flight one.
	for _, id := range ids[10:20] {
		if err := j.Finish(id, StatusCompleted); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if _, err := j.Dispatch(ctx, journalTestMeta(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	recs := j.Records()
	if len(recs) != maxRecords {
		t.Fatalf("len = %d", len(recs))
	}
	for _, r := range recs {
		if r.Status != StatusDispatched {
			t.Fatalf("a finished record survived while in-flight ones were kept: %+v", r)
		}
	}
	if recs[9].ID != ids[9] || recs[10].ID != ids[20] {
		t.Fatalf("wrong records evicted: %s %s", recs[9].ID, recs[10].ID)
	}
	if st := j.Stats(); st.Evicted != 10 || st.InFlight != maxRecords || st.Records != maxRecords || st.Durable {
		t.Fatalf("stats = %+v", st)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].StartedMs < recs[i-1].StartedMs {
			t.Fatal("records not oldest first")
		}
	}
}

func TestJournalByteBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.json")
	j := openTestJournal(t, path)
	defer j.Close()
	big := func(i int) CallMeta {
		m := journalTestMeta(i)
		m.Project = fmt.Sprintf("/%04d", i) + strings.Repeat("p", maxProject-5)
		return m
	}
	var ids []string
	var err error
	for i := 0; ; i++ {
		var id string
		id, err = j.Dispatch(t.Context(), big(i))
		if err != nil {
			break
		}
		ids = append(ids, id)
		if st := j.Stats(); st.Bytes > maxBytes {
			t.Fatalf("bytes %d over budget", st.Bytes)
		}
	}
	if !errors.Is(err, ErrBudget) || len(ids) >= maxRecords {
		t.Fatalf("after %d in-flight: %v", len(ids), err)
	}
	if err := j.Finish(ids[0], StatusOutcomeUnknown); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Dispatch(t.Context(), big(9999)); err != nil {
		t.Fatalf("dispatch after a finish: %v", err)
	}
	st := j.Stats()
	if st.Evicted != 1 || st.Bytes > maxBytes {
		t.Fatalf("stats = %+v", st)
	}
	if j.Records()[0].ID != ids[1] {
		t.Fatal("oldest finished record not evicted")
	}
	// The file stays within its 1 MiB bound.
	if fi, err := os.Stat(path); err != nil || fi.Size() > maxFileBytes {
		t.Fatalf("file: %v %v", fi.Size(), err)
	}
}

func TestJournalStringBounds(t *testing.T) {
	j := openTestJournal(t, "")
	defer j.Close()
	ok := journalTestMeta(0)
	ok.Server = strings.Repeat("é", maxString) // characters, not bytes
	ok.Project = strings.Repeat("p", maxProject)
	_, err := j.Dispatch(t.Context(), ok)
	if err != nil {
		t.Fatalf("at the bounds: %v", err)
	}
	for name, mutate := range map[string]func(*CallMeta){
		"server too long":     func(m *CallMeta) { m.Server = strings.Repeat("s", maxString+1) },
		"empty server":        func(m *CallMeta) { m.Server = "" },
		"empty tool":          func(m *CallMeta) { m.Tool = "" },
		"tool too long":       func(m *CallMeta) { m.Tool = strings.Repeat("t", maxString+1) },
		"session too long":    func(m *CallMeta) { m.SessionID = strings.Repeat("x", maxString+1) },
		"run too long":        func(m *CallMeta) { m.RunID = strings.Repeat("x", maxString+1) },
		"project too long":    func(m *CallMeta) { m.Project = strings.Repeat("p", maxProject+1) },
		"control in tool":     func(m *CallMeta) { m.Tool = "a\nb" },
		"invalid utf-8":       func(m *CallMeta) { m.Server = "\xff" },
		"control in project":  func(m *CallMeta) { m.Project = "/a\x00b" },
		"control in session":  func(m *CallMeta) { m.SessionID = "\x1b[31m" },
		"control in run (c1)": func(m *CallMeta) { m.RunID = "\u0085" },
	} {
		m := journalTestMeta(1)
		mutate(&m)
		if _, err := j.Dispatch(t.Context(), m); !errors.Is(err, ErrInvalidCallMeta) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := len(j.Records()); n != 1 {
		t.Fatalf("rejected calls were recorded: %d records", n)
	}
}

func TestJournalFinishErrors(t *testing.T) {
	j := openTestJournal(t, "")
	id, err := j.Dispatch(t.Context(), journalTestMeta(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(id, StatusDispatched); err == nil {
		t.Fatal("Finish with dispatched status accepted")
	}
	if err := j.Finish("nope", StatusCompleted); !errors.Is(err, ErrUnknownCall) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := j.Finish(id, StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(id, StatusOutcomeUnknown); !errors.Is(err, ErrCallFinished) {
		t.Fatalf("second Finish: %v", err)
	}
	// Records hands out copies.
	recs := j.Records()
	*recs[0].FinishedMs = -1
	recs[0].Status = "changed"
	if r := j.Records()[0]; *r.FinishedMs == -1 || r.Status != StatusCompleted {
		t.Fatal("Records aliases journal state")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Dispatch(t.Context(), journalTestMeta(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Dispatch after Close: %v", err)
	}
	if len(j.Records()) != 1 {
		t.Fatal("Records unusable after Close")
	}
	// A cancelled context dispatches nothing.
	j2 := openTestJournal(t, "")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := j2.Dispatch(ctx, journalTestMeta(2)); !errors.Is(err, context.Canceled) || len(j2.Records()) != 0 {
		t.Fatalf("cancelled Dispatch: %v", err)
	}
}
