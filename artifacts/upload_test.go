package artifacts_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
)

// upload sends data in ChunkBytes appends and commits it.
func upload(t *testing.T, s *artifacts.Store, owner, run string, f artifacts.Format, data []byte) (artifacts.Ref, error) {
	t.Helper()
	up, err := s.Begin(owner, run, f)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	for off := 0; off < len(data); off += artifacts.ChunkBytes {
		chunk := data[off:min(off+artifacts.ChunkBytes, len(data))]
		size, err := s.Append(owner, up.UploadID, int64(off), chunk)
		if err != nil {
			t.Fatalf("Append(%d): %v", off, err)
		}
		if size != int64(off+len(chunk)) {
			t.Fatalf("Append(%d) size = %d", off, size)
		}
	}
	return s.Commit(context.Background(), owner, up.UploadID)
}

func startRun(t *testing.T, s *artifacts.Store, owner, run string) {
	t.Helper()
	if err := s.StartRun(owner, run); err != nil {
		t.Fatal(err)
	}
}

func TestUploadTwoChunks(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	startRun(t, s, ownerA, "run")
	up, err := s.Begin(ownerA, "run", artifacts.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	if up.ChunkBytes != 262144 || up.MaxBytes != 16<<20 || !uuidRE.MatchString(up.UploadID) {
		t.Errorf("upload = %+v", up)
	}
	noTemps(t, dir)
	first := bytes.Repeat([]byte("ж"), artifacts.ChunkBytes/2) // a full chunk
	second := []byte("tail ✓")
	if n, err := s.Append(ownerA, up.UploadID, 0, first); err != nil || n != int64(len(first)) {
		t.Fatalf("append 1: %d, %v", n, err)
	}
	if st := s.Stats(); st.Uploads != 1 {
		t.Errorf("stats = %+v", st)
	}
	if n, err := s.Append(ownerA, up.UploadID, int64(len(first)), second); err != nil || n != int64(len(first)+len(second)) {
		t.Fatalf("append 2: %d, %v", n, err)
	}
	ref, err := s.Commit(ctx, ownerA, up.UploadID)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]byte{}, first...), second...)
	if ref.Size != int64(len(all)) || ref.SHA256 != sha(all) || ref.Format != artifacts.FormatText || ref.Lifetime != "server" || ref.Eviction != "oldest-first" {
		t.Errorf("ref = %+v", ref)
	}
	if got := readAll(t, s, ownerA, ref); !bytes.Equal(got, all) {
		t.Error("read back differs")
	}
	// The upload is gone.
	_, err = s.Append(ownerA, up.UploadID, ref.Size, []byte("x"))
	wantErr(t, err, artifacts.ErrUnknownUpload)
	_, err = s.Commit(ctx, ownerA, up.UploadID)
	wantErr(t, err, artifacts.ErrUnknownUpload)
	wantErr(t, s.Abort(ownerA, up.UploadID), artifacts.ErrUnknownUpload)
	if st := s.Stats(); st.Uploads != 0 || st.Entries != 1 {
		t.Errorf("stats = %+v", st)
	}

	// A 1 MiB JSON value, the way the worker sends one.
	var b bytes.Buffer
	b.WriteString("[")
	for i := range 40000 {
		fmt.Fprintf(&b, `{"i":%d,"s":"row"},`, i)
	}
	b.WriteString("null]")
	ref, err = upload(t, s, ownerA, "run", artifacts.FormatJSON, b.Bytes())
	if err != nil || ref.SHA256 != sha(b.Bytes()) {
		t.Fatalf("json upload: %+v, %v", ref, err)
	}
	noTemps(t, dir)
}

func TestUploadAppendRefusals(t *testing.T) {
	s, _ := newSmallStore(t, 64, 1<<20, 100)
	startRun(t, s, ownerA, "run")
	up, err := s.Begin(ownerA, "run", artifacts.FormatBinary)
	if err != nil {
		t.Fatal(err)
	}
	if up.MaxBytes != 100 {
		t.Errorf("max bytes = %d", up.MaxBytes)
	}
	if _, err := s.Append(ownerA, up.UploadID, 0, []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 5, 11, -1} { // a replay, a rewind, a gap
		_, err := s.Append(ownerA, up.UploadID, off, []byte("x"))
		wantErr(t, err, artifacts.ErrOffsetMismatch)
		if err.Error() != "Artifact upload offset mismatch; do not replay an append" {
			t.Errorf("message = %q", err)
		}
	}
	_, err = s.Append(ownerA, up.UploadID, 10, make([]byte, artifacts.ChunkBytes+1))
	wantErr(t, err, artifacts.ErrChunkTooLarge)
	_, err = s.Append(ownerA, up.UploadID, 10, make([]byte, 91))
	wantErr(t, err, artifacts.ErrTooLarge)
	_, err = s.Append(ownerB, up.UploadID, 10, []byte("x"))
	wantErr(t, err, artifacts.ErrUnknownUpload)
	_, err = s.Commit(context.Background(), ownerB, up.UploadID)
	wantErr(t, err, artifacts.ErrUnknownUpload)
	wantErr(t, s.Abort(ownerB, up.UploadID), artifacts.ErrUnknownUpload)
	// None of that changed the size or the upload.
	n, err := s.Append(ownerA, up.UploadID, 10, make([]byte, 90))
	if err != nil || n != 100 {
		t.Fatalf("append to the limit: %d, %v", n, err)
	}
	ref, err := s.Commit(context.Background(), ownerA, up.UploadID)
	want := append([]byte("0123456789"), make([]byte, 90)...)
	if err != nil || ref.Size != 100 || ref.SHA256 != sha(want) {
		t.Errorf("commit = %+v, %v", ref, err)
	}
}

func TestUploadLimitAndAbort(t *testing.T) {
	s, _ := newStore(t)
	startRun(t, s, ownerA, "run")
	startRun(t, s, ownerB, "run")
	var ids []string
	for i := range artifacts.MaxUploads {
		owner := ownerA
		if i%2 == 1 {
			owner = ownerB
		}
		up, err := s.Begin(owner, "run", artifacts.FormatBinary)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, up.UploadID)
	}
	_, err := s.Begin(ownerA, "run", artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrTooManyUploads)
	if err.Error() != "At most four unfinished artifact uploads are allowed" {
		t.Errorf("message = %q", err)
	}
	if err := s.Abort(ownerA, ids[0]); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.Abort(ownerA, ids[0]), artifacts.ErrUnknownUpload)
	_, err = s.Append(ownerA, ids[0], 0, []byte("x"))
	wantErr(t, err, artifacts.ErrUnknownUpload)
	if _, err := s.Begin(ownerA, "run", artifacts.FormatBinary); err != nil {
		t.Errorf("begin after abort: %v", err)
	}
	_, err = s.Begin(ownerA, "run", "yaml")
	wantErr(t, err, artifacts.ErrFormat)
}

func TestUploadBoundToRun(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.Begin(ownerA, "never-started", artifacts.FormatText)
	wantErr(t, err, artifacts.ErrNoActiveRun)
	if err.Error() != "Artifact upload needs an active originating run" {
		t.Errorf("message = %q", err)
	}
	_, err = s.Begin("unregistered", "run", artifacts.FormatText)
	wantErr(t, err, artifacts.ErrNoActiveRun)
	startRun(t, s, ownerA, "r1")
	startRun(t, s, ownerA, "r2")
	_, err = s.Begin(ownerB, "r1", artifacts.FormatText) // another owner's run
	wantErr(t, err, artifacts.ErrNoActiveRun)

	u1, err := s.Begin(ownerA, "r1", artifacts.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := s.Begin(ownerA, "r2", artifacts.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ownerA, u1.UploadID, 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	s.EndRun(ownerA, "r1")
	s.EndRun(ownerA, "r1") // idempotent
	_, err = s.Append(ownerA, u1.UploadID, 1, []byte("b"))
	wantErr(t, err, artifacts.ErrUnknownUpload)
	_, err = s.Commit(context.Background(), ownerA, u1.UploadID)
	wantErr(t, err, artifacts.ErrUnknownUpload)
	_, err = s.Begin(ownerA, "r1", artifacts.FormatText)
	wantErr(t, err, artifacts.ErrNoActiveRun)
	if st := s.Stats(); st.Uploads != 1 || st.Runs != 1 {
		t.Errorf("stats = %+v", st)
	}
	if _, err := s.Append(ownerA, u2.UploadID, 0, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(context.Background(), ownerA, u2.UploadID); err != nil {
		t.Fatal(err)
	}
}

func TestDropOwnerAbortsUploads(t *testing.T) {
	s, _ := newStore(t)
	startRun(t, s, ownerA, "run")
	startRun(t, s, ownerB, "run")
	ua, err := s.Begin(ownerA, "run", artifacts.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	ub, err := s.Begin(ownerB, "run", artifacts.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	s.DropOwner(ownerA)
	_, err = s.Commit(context.Background(), ownerA, ua.UploadID)
	wantErr(t, err, artifacts.ErrUnknownUpload)
	if st := s.Stats(); st.Uploads != 1 {
		t.Errorf("stats = %+v", st)
	}
	if _, err := s.Append(ownerB, ub.UploadID, 0, []byte("b")); err != nil {
		t.Errorf("other owner's upload: %v", err)
	}
}

func TestFailedCommitEvictsNothing(t *testing.T) {
	s, _ := newSmallStore(t, 3, 1<<20, 1<<20)
	ctx := context.Background()
	startRun(t, s, ownerA, "run")
	var refs []artifacts.Ref
	for i := range 3 {
		ref, err := upload(t, s, ownerA, "run", artifacts.FormatJSON, []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	cases := []struct {
		format artifacts.Format
		data   string
		want   error
	}{
		{artifacts.FormatJSON, `{"a": [1, 2}`, artifacts.ErrInvalidJSON},
		{artifacts.FormatJSON, ``, artifacts.ErrInvalidJSON},
		{artifacts.FormatJSON, "\"\xff\"", artifacts.ErrNotUTF8},
		{artifacts.FormatText, "ok\xe2\x82", artifacts.ErrNotUTF8},
	}
	for _, c := range cases {
		_, err := upload(t, s, ownerA, "run", c.format, []byte(c.data))
		wantErr(t, err, c.want)
	}
	if st := s.Stats(); st.Entries != 3 || st.Evictions != 0 || st.Uploads != 0 {
		t.Fatalf("stats = %+v", st)
	}
	for _, ref := range refs {
		if _, err := s.Read(ctx, ownerA, ref.ID, 0, 1, "text"); err != nil {
			t.Errorf("%s: %v", ref.ID, err)
		}
	}
	// A good commit evicts the oldest.
	if _, err := upload(t, s, ownerA, "run", artifacts.FormatJSON, []byte(`{"ok":1}`)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Read(ctx, ownerA, refs[0].ID, 0, 1, "text")
	wantErr(t, err, artifacts.ErrUnknown)
}
