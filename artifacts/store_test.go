package artifacts_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/iota-uz/repl-mcp/artifacts"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRoundTripEachFormat(t *testing.T) {
	s, dir := newStore(t)
	cases := []struct {
		format artifacts.Format
		data   []byte
	}{
		{artifacts.FormatJSON, []byte(`{"rows": [1, 2.5, "ж", null, true, false, {"k": []}]}`)},
		{artifacts.FormatText, []byte(strings.Repeat("héllo wörld\n", 10000))},
		{artifacts.FormatBinary, func() []byte {
			b := make([]byte, 200000)
			for i := range b {
				b[i] = byte(i * 7)
			}
			return b
		}()},
		{artifacts.FormatBinary, nil},
		{artifacts.FormatText, nil},
	}
	for _, c := range cases {
		ref := createBytes(t, s, ownerA, c.data, c.format)
		noTemps(t, dir) // unlinked right after creation
		want := artifacts.Ref{ID: ref.ID, Size: int64(len(c.data)), Format: c.format, SHA256: sha(c.data), Lifetime: "server", Eviction: "oldest-first"}
		if ref != want {
			t.Errorf("ref = %+v, want %+v", ref, want)
		}
		if !uuidRE.MatchString(ref.ID) {
			t.Errorf("id %q is not a UUIDv4", ref.ID)
		}
		if got := readAll(t, s, ownerA, ref); !bytes.Equal(got, c.data) {
			t.Errorf("%s: read back %d bytes, want %d", c.format, len(got), len(c.data))
		}
	}
	st := s.Stats()
	if st.Entries != len(cases) || st.IOJobs != 0 || st.Owners != 2 {
		t.Errorf("stats = %+v", st)
	}
	ref := artifacts.Ref{ID: "x", Size: 1, Format: artifacts.FormatJSON, SHA256: "ab", Lifetime: "server", Eviction: "oldest-first"}
	enc, _ := json.Marshal(ref)
	if string(enc) != `{"id":"x","size":1,"format":"json","sha256":"ab","lifetime":"server","eviction":"oldest-first"}` {
		t.Errorf("ref JSON = %s", enc)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []string{"json", "text", "binary"} {
		if got, err := artifacts.ParseFormat(f); err != nil || string(got) != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	for _, f := range []string{"", "JSON", "bytes"} {
		if _, err := artifacts.ParseFormat(f); !errors.Is(err, artifacts.ErrFormat) {
			t.Errorf("ParseFormat(%q) err = %v", f, err)
		}
	}
}

func TestCreateRefusals(t *testing.T) {
	s, _ := newStore(t)
	src := t.TempDir()
	ctx := context.Background()
	good := writeFile(t, src, "good.json", []byte(`[1]`))

	_, err := s.Create(ctx, ownerA, "rel/good.json", artifacts.FormatJSON)
	wantErr(t, err, artifacts.ErrCreateArgs)
	_, err = s.Create(ctx, ownerA, good, "yaml")
	wantErr(t, err, artifacts.ErrCreateArgs)
	_, err = s.Create(ctx, "nobody", good, artifacts.FormatJSON)
	wantErr(t, err, artifacts.ErrUnknownOwner)
	_, err = s.Create(ctx, ownerA, filepath.Join(src, "missing"), artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrSourceOpen)
	if !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), src) {
		t.Errorf("missing source: %v (want ErrNotExist, no path)", err)
	}
	_, err = s.Create(ctx, ownerA, src, artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrNotRegular)

	secret := "s3cr3t-\xff-content"
	_, err = s.Create(ctx, ownerA, writeFile(t, src, "bad.txt", []byte(secret)), artifacts.FormatText)
	wantErr(t, err, artifacts.ErrNotUTF8)
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error leaks content: %v", err)
	}
	_, err = s.Create(ctx, ownerA, writeFile(t, src, "bad.json", []byte("\xff")), artifacts.FormatJSON)
	wantErr(t, err, artifacts.ErrNotUTF8)
	for _, bad := range []string{``, `{`, `{"a":1,}`, `[1] [2]`, `01`, `"s3cr3t`, `{'a':1}`, "\"\t\""} {
		_, err = s.Create(ctx, ownerA, writeFile(t, src, "bad.json", []byte(bad)), artifacts.FormatJSON)
		wantErr(t, err, artifacts.ErrInvalidJSON)
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error leaks content: %v", err)
		}
	}
	deep := strings.Repeat("[", artifacts.MaxJSONDepth+1) + strings.Repeat("]", artifacts.MaxJSONDepth+1)
	_, err = s.Create(ctx, ownerA, writeFile(t, src, "deep.json", []byte(deep)), artifacts.FormatJSON)
	wantErr(t, err, artifacts.ErrInvalidJSON)
	okDeep := strings.Repeat("[", artifacts.MaxJSONDepth) + strings.Repeat("]", artifacts.MaxJSONDepth)
	mustCreate(t, s, ownerA, writeFile(t, src, "deep.json", []byte(okDeep)), artifacts.FormatJSON)

	// The same invalid bytes are a fine binary artifact.
	mustCreate(t, s, ownerA, writeFile(t, src, "bin", []byte("\xff{")), artifacts.FormatBinary)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Create(cctx, ownerA, good, artifacts.FormatJSON)
	wantErr(t, err, context.Canceled)

	if st := s.Stats(); st.Entries != 2 || st.IOJobs != 0 {
		t.Errorf("stats = %+v, want 2 entries and no job", st)
	}
}

func TestCreateOversize(t *testing.T) {
	s, _ := newStore(t)
	p := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(artifacts.MaxArtifactBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = s.Create(context.Background(), ownerA, p, artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrTooLarge)
	if err.Error() != "Artifact exceeds 16 MiB" {
		t.Errorf("message = %q", err)
	}
	if err := os.Truncate(p, artifacts.MaxArtifactBytes); err != nil {
		t.Fatal(err)
	}
	ref := mustCreate(t, s, ownerA, p, artifacts.FormatBinary)
	if ref.Size != artifacts.MaxArtifactBytes || ref.SHA256 != sha(make([]byte, artifacts.MaxArtifactBytes)) {
		t.Errorf("ref = %+v", ref)
	}
}

func TestReadCyrillicRanges(t *testing.T) {
	s, _ := newStore(t)
	text := strings.Repeat("Ж", 100000)
	ref := createBytes(t, s, ownerA, []byte(text), artifacts.FormatText)
	if ref.Size != 200000 {
		t.Fatalf("size = %d", ref.Size)
	}
	ctx := context.Background()
	n := 0
	for off := int64(0); off < ref.Size; off += 10 {
		r, err := s.Read(ctx, ownerA, ref.ID, off, 10, "text")
		if err != nil {
			t.Fatalf("Read(%d, 10): %v", off, err)
		}
		if r.Content != "ЖЖЖЖЖ" || r.Length != 10 || r.Offset != off || r.Encoding != "text" || r.Artifact != ref {
			t.Fatalf("Read(%d, 10) = %+v", off, r)
		}
		if r.HasMore != (off+10 < ref.Size) {
			t.Fatalf("Read(%d, 10).HasMore = %v", off, r.HasMore)
		}
		n++
	}
	if n != 20000 {
		t.Errorf("%d ranges", n)
	}

	_, err := s.Read(ctx, ownerA, ref.ID, 0, 9, "text")
	wantErr(t, err, artifacts.ErrRangeUTF8)
	if err.Error() != "Range is not complete UTF-8; adjust boundaries or request hex/base64" {
		t.Errorf("message = %q", err)
	}
	_, err = s.Read(ctx, ownerA, ref.ID, 1, 10, "text")
	wantErr(t, err, artifacts.ErrRangeUTF8)

	r, err := s.Read(ctx, ownerA, ref.ID, 0, 9, "hex")
	if err != nil || r.Content != "d096d096d096d096d0" || r.Length != 9 || !r.HasMore {
		t.Errorf("hex = %+v, %v", r, err)
	}
	r, err = s.Read(ctx, ownerA, ref.ID, 0, 9, "base64")
	if err != nil || r.Content != base64.StdEncoding.EncodeToString([]byte(text[:9])) || r.Encoding != "base64" {
		t.Errorf("base64 = %+v, %v", r, err)
	}
}

func TestReadRangeBounds(t *testing.T) {
	s, _ := newStore(t)
	data := []byte("0123456789")
	ref := createBytes(t, s, ownerA, data, artifacts.FormatText)
	ctx := context.Background()
	for _, c := range []struct{ off, n int64 }{{11, 0}, {11, 1}, {0, 65537}, {-1, 1}, {0, -1}} {
		_, err := s.Read(ctx, ownerA, ref.ID, c.off, c.n, "text")
		wantErr(t, err, artifacts.ErrRange)
		if err.Error() != "Artifact range must fit file and length must be <= 65536 bytes" {
			t.Errorf("message = %q", err)
		}
	}
	r, err := s.Read(ctx, ownerA, ref.ID, 7, 65536, "text")
	if err != nil || r.Content != "789" || r.Length != 3 || r.HasMore {
		t.Errorf("clipped = %+v, %v", r, err)
	}
	r, err = s.Read(ctx, ownerA, ref.ID, 10, 5, "hex")
	if err != nil || r.Content != "" || r.Length != 0 || r.HasMore {
		t.Errorf("at end = %+v, %v", r, err)
	}
	r, err = s.Read(ctx, ownerA, ref.ID, 0, 0, "text")
	if err != nil || r.Content != "" || !r.HasMore {
		t.Errorf("empty = %+v, %v", r, err)
	}
	r, err = s.Read(ctx, ownerA, ref.ID, 0, 2, "")
	if err != nil || r.Encoding != "text" || r.Content != "01" {
		t.Errorf("default encoding = %+v, %v", r, err)
	}
	_, err = s.Read(ctx, ownerA, ref.ID, 0, 2, "utf-16")
	wantErr(t, err, artifacts.ErrEncoding)

	// The whole of a 64 KiB boundary: 65536 bytes at once.
	big := bytes.Repeat([]byte{0xab}, 100000)
	bref := createBytes(t, s, ownerA, big, artifacts.FormatBinary)
	r, err = s.Read(ctx, ownerA, bref.ID, 0, 65536, "hex")
	if err != nil || r.Length != 65536 || r.Content != hex.EncodeToString(big[:65536]) || !r.HasMore {
		t.Errorf("64 KiB read: length %d, %v", r.Length, err)
	}
}

// TestReadBytes: the bytes of a range, with the range Read gives for it (less its
// encoding and content), and Read's refusals: bounds, another owner's id. A range
// need not be whole UTF-8: it is not encoded.
func TestReadBytes(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	data := []byte(strings.Repeat("Ж", 50000))
	ref := createBytes(t, s, ownerA, data, artifacts.FormatText)
	for _, c := range []struct{ off, n int64 }{{0, 65536}, {65536, 65536}, {1, 9}, {99990, 65536}, {100000, 5}} {
		r, got, err := s.ReadBytes(ctx, ownerA, ref.ID, c.off, c.n)
		end := min(c.off+c.n, ref.Size)
		if err != nil || !bytes.Equal(got, data[c.off:end]) {
			t.Fatalf("ReadBytes(%d, %d) = %d bytes, %v; want bytes %d to %d", c.off, c.n, len(got), err, c.off, end)
		}
		want, err := s.Read(ctx, ownerA, ref.ID, c.off, c.n, "base64")
		if err != nil {
			t.Fatal(err)
		}
		want.Encoding, want.Content = "", ""
		if r != want {
			t.Errorf("ReadBytes(%d, %d) range = %+v, want %+v", c.off, c.n, r, want)
		}
	}
	for _, c := range []struct{ off, n int64 }{{100001, 0}, {0, 65537}, {-1, 1}, {0, -1}} {
		_, got, err := s.ReadBytes(ctx, ownerA, ref.ID, c.off, c.n)
		wantErr(t, err, artifacts.ErrRange)
		if got != nil {
			t.Errorf("ReadBytes(%d, %d) refused with %d bytes", c.off, c.n, len(got))
		}
	}
	_, _, err := s.ReadBytes(ctx, ownerB, ref.ID, 0, 1)
	wantErr(t, err, artifacts.ErrUnknown)
}

func TestCountEvictionOldestFirst(t *testing.T) {
	s, _ := newStore(t)
	src := t.TempDir()
	var refs []artifacts.Ref
	for i := range artifacts.MaxEntries {
		refs = append(refs, mustCreate(t, s, ownerA, writeFile(t, src, fmt.Sprint(i), []byte(fmt.Sprint(i))), artifacts.FormatText))
	}
	ctx := context.Background()
	// Failed imports evict nothing.
	fifo := filepath.Join(src, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Create(ctx, ownerA, writeFile(t, src, "bad.json", []byte(`{"a":`)), artifacts.FormatJSON)
	wantErr(t, err, artifacts.ErrInvalidJSON)
	_, err = s.Create(ctx, ownerA, fifo, artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrNotRegular)
	big := filepath.Join(src, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, artifacts.MaxArtifactBytes+1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx, ownerA, big, artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrTooLarge)
	_, err = s.Create(ctx, ownerA, writeFile(t, src, "bad.txt", []byte{0xc3}), artifacts.FormatText)
	wantErr(t, err, artifacts.ErrNotUTF8)
	if st := s.Stats(); st.Entries != 64 || st.Evictions != 0 {
		t.Fatalf("after failed imports: %+v", st)
	}
	if _, err := s.Read(ctx, ownerA, refs[0].ID, 0, 10, "text"); err != nil {
		t.Fatalf("oldest gone after failed imports: %v", err)
	}

	// The 65th evicts the oldest, whoever owns it.
	last := mustCreate(t, s, ownerB, writeFile(t, src, "65", []byte("65")), artifacts.FormatText)
	_, err = s.Read(ctx, ownerA, refs[0].ID, 0, 10, "text")
	wantErr(t, err, artifacts.ErrUnknown)
	for _, ref := range append(refs[1:], last) {
		owner := ownerA
		if ref == last {
			owner = ownerB
		}
		if _, err := s.Read(ctx, owner, ref.ID, 0, 10, "text"); err != nil {
			t.Fatalf("%s: %v", ref.ID, err)
		}
	}
	if st := s.Stats(); st.Entries != 64 || st.Evictions != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestByteBudgetEviction(t *testing.T) {
	s, _ := newSmallStore(t, 64, 1000, 400)
	ctx := context.Background()
	mk := func(n int) artifacts.Ref {
		return createBytes(t, s, ownerA, bytes.Repeat([]byte("x"), n), artifacts.FormatBinary)
	}
	a, b, c := mk(300), mk(300), mk(300)
	if st := s.Stats(); st.Bytes != 900 {
		t.Fatalf("bytes = %d", st.Bytes)
	}
	_, err := s.Create(ctx, ownerA, writeFile(t, t.TempDir(), "big", make([]byte, 401)), artifacts.FormatBinary)
	wantErr(t, err, artifacts.ErrTooLarge)
	d := mk(300) // 900+300 > 1000: a goes
	if st := s.Stats(); st.Bytes != 900 || st.Entries != 3 || st.Evictions != 1 {
		t.Fatalf("after d: %+v", st)
	}
	e := mk(400) // 900+400 > 1000: b goes, 600+400 fits
	if st := s.Stats(); st.Bytes != 1000 || st.Entries != 3 || st.Evictions != 2 {
		t.Fatalf("after e: %+v", st)
	}
	for _, gone := range []artifacts.Ref{a, b} {
		_, err := s.Read(ctx, ownerA, gone.ID, 0, 1, "hex")
		wantErr(t, err, artifacts.ErrUnknown)
	}
	for _, kept := range []artifacts.Ref{c, d, e} {
		if _, err := s.Read(ctx, ownerA, kept.ID, 0, 1, "hex"); err != nil {
			t.Errorf("%s: %v", kept.ID, err)
		}
	}
	// A deletion frees its bytes at once.
	if err := s.Delete(ownerA, e.ID); err != nil {
		t.Fatal(err)
	}
	mk(400)
	if st := s.Stats(); st.Bytes != 1000 || st.Evictions != 2 {
		t.Errorf("after delete and create: %+v", st)
	}
}

func TestOwnerIsolation(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	data := []byte(`{"private": true}`)
	ref := createBytes(t, s, ownerA, data, artifacts.FormatJSON)
	missing := "00000000-0000-4000-8000-000000000000"
	dst := filepath.Join(t.TempDir(), "out")

	for _, id := range []string{ref.ID, missing} {
		_, rerr := s.Read(ctx, ownerB, id, 0, 10, "text")
		_, serr := s.Save(ctx, ownerB, id, dst, true)
		_, ferr := s.ForwardValue(ctx, ownerB, id, "json")
		derr := s.Delete(ownerB, id)
		for _, err := range []error{rerr, serr, ferr, derr} {
			wantErr(t, err, artifacts.ErrUnknown)
			if err.Error() != "Artifact unknown, expired, evicted or belongs to another session" {
				t.Errorf("message = %q", err)
			}
		}
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("foreign save wrote %s: %v", dst, err)
	}
	if got := readAll(t, s, ownerA, ref); !bytes.Equal(got, data) {
		t.Errorf("owner reads %q", got)
	}
	if _, err := s.Read(ctx, "never-registered", ref.ID, 0, 1, "text"); !errors.Is(err, artifacts.ErrUnknown) {
		t.Errorf("unregistered reader: %v", err)
	}
}

func TestDropOwner(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a1 := createBytes(t, s, ownerA, []byte("one"), artifacts.FormatText)
	a2 := createBytes(t, s, ownerA, []byte("two"), artifacts.FormatText)
	b1 := createBytes(t, s, ownerB, []byte("bee"), artifacts.FormatText)
	if err := s.StartRun(ownerA, "run-1"); err != nil {
		t.Fatal(err)
	}
	up, err := s.Begin(ownerA, "run-1", artifacts.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ownerA, up.UploadID, 0, []byte("abc")); err != nil {
		t.Fatal(err)
	}

	s.DropOwner(ownerA)
	s.DropOwner(ownerA) // idempotent
	st := s.Stats()
	if st.Entries != 1 || st.Bytes != 3 || st.Uploads != 0 || st.Owners != 1 || st.Runs != 0 {
		t.Errorf("stats = %+v", st)
	}
	for _, id := range []string{a1.ID, a2.ID} {
		_, err := s.Read(ctx, ownerA, id, 0, 1, "text")
		wantErr(t, err, artifacts.ErrUnknown)
	}
	_, err = s.Append(ownerA, up.UploadID, 3, []byte("d"))
	wantErr(t, err, artifacts.ErrUnknownUpload)
	_, err = s.Create(ctx, ownerA, writeFile(t, t.TempDir(), "x", []byte("x")), artifacts.FormatText)
	wantErr(t, err, artifacts.ErrUnknownOwner)
	_, err = s.Begin(ownerA, "run-1", artifacts.FormatText)
	wantErr(t, err, artifacts.ErrNoActiveRun)
	wantErr(t, s.StartRun(ownerA, "run-2"), artifacts.ErrUnknownOwner)
	if _, err := s.Read(ctx, ownerB, b1.ID, 0, 3, "text"); err != nil {
		t.Errorf("other owner's artifact: %v", err)
	}
}

func TestOwnerAndRunLimits(t *testing.T) {
	s := artifacts.New(artifacts.Config{Dir: t.TempDir()})
	defer s.Close()
	for i := range artifacts.MaxOwners {
		if err := s.Register(fmt.Sprint("o", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Register("o0"); err != nil {
		t.Errorf("re-register: %v", err)
	}
	wantErr(t, s.Register("one-too-many"), artifacts.ErrTooManyOwners)
	for i := range artifacts.MaxRuns {
		if err := s.StartRun(fmt.Sprint("o", i%3), fmt.Sprint("r", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.StartRun("o0", "r0"); err != nil {
		t.Errorf("restart active run: %v", err)
	}
	wantErr(t, s.StartRun("o5", "r-extra"), artifacts.ErrTooManyRuns)
	s.EndRun("o0", "r0")
	if err := s.StartRun("o5", "r-extra"); err != nil {
		t.Errorf("after EndRun: %v", err)
	}
	s.DropOwner("o1") // frees its runs and its owner slot
	if st := s.Stats(); st.Runs != artifacts.MaxRuns-85 || st.Owners != artifacts.MaxOwners-1 {
		t.Errorf("stats = %+v", st)
	}
	if err := s.Register("one-too-many"); err != nil {
		t.Errorf("after DropOwner: %v", err)
	}
}

func TestFIFOCreatesTakeNoSlot(t *testing.T) {
	s, _ := newStore(t)
	src := t.TempDir()
	fifo := filepath.Join(src, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		within(t, fmt.Sprint("FIFO create ", i), func() {
			_, err := s.Create(ctx, ownerA, fifo, artifacts.FormatBinary)
			wantErr(t, err, artifacts.ErrNotRegular)
		})
	}
	if st := s.Stats(); st.IOJobs != 0 {
		t.Fatalf("slots leaked: %+v", st)
	}
	// Even with every slot taken, a FIFO is refused as a FIFO, not for capacity.
	release, err := s.HoldIOSlots(artifacts.MaxIOJobs)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "FIFO create with slots held", func() {
		_, err := s.Create(ctx, ownerA, fifo, artifacts.FormatText)
		wantErr(t, err, artifacts.ErrNotRegular)
	})
	release()
	mustCreate(t, s, ownerA, writeFile(t, src, "ok", []byte("ok")), artifacts.FormatText)
}

func TestIOSlotsTryAcquire(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	src := writeFile(t, t.TempDir(), "src", []byte(`"v"`))
	ref := mustCreate(t, s, ownerA, src, artifacts.FormatJSON)
	if err := s.StartRun(ownerA, "run"); err != nil {
		t.Fatal(err)
	}
	up, err := s.Begin(ownerA, "run", artifacts.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ownerA, up.UploadID, 0, []byte(`1`)); err != nil {
		t.Fatal(err)
	}

	release, err := s.HoldIOSlots(artifacts.MaxIOJobs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.HoldIOSlots(1); !errors.Is(err, artifacts.ErrIOBusy) {
		t.Fatalf("fifth slot: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	_, cerr := s.Create(ctx, ownerA, src, artifacts.FormatJSON)
	_, rerr := s.Read(ctx, ownerA, ref.ID, 0, 1, "text")
	_, serr := s.Save(ctx, ownerA, ref.ID, dst, false)
	_, ferr := s.ForwardValue(ctx, ownerA, ref.ID, "json")
	_, merr := s.Commit(ctx, ownerA, up.UploadID)
	for _, err := range []error{cerr, rerr, serr, ferr, merr} {
		wantErr(t, err, artifacts.ErrIOBusy)
		if err.Error() != "Artifact I/O capacity exhausted; retry after active jobs complete" {
			t.Errorf("message = %q", err)
		}
	}
	if st := s.Stats(); st.Entries != 1 || st.Uploads != 0 || st.IOJobs != 4 {
		t.Errorf("stats while busy = %+v", st)
	}
	// Appends are not I/O jobs.
	up2, err := s.Begin(ownerA, "run", artifacts.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ownerA, up2.UploadID, 0, []byte(`2`)); err != nil {
		t.Fatal(err)
	}
	release()

	if _, err := s.Create(ctx, ownerA, src, artifacts.FormatJSON); err != nil {
		t.Error(err)
	}
	if _, err := s.Read(ctx, ownerA, ref.ID, 0, 1, "text"); err != nil {
		t.Error(err)
	}
	if _, err := s.Save(ctx, ownerA, ref.ID, dst, false); err != nil {
		t.Error(err)
	}
	if _, err := s.ForwardValue(ctx, ownerA, ref.ID, "json"); err != nil {
		t.Error(err)
	}
	if _, err := s.Commit(ctx, ownerA, up2.UploadID); err != nil {
		t.Error(err)
	}
	_, err = s.Commit(ctx, ownerA, up.UploadID) // gone with the busy commit
	wantErr(t, err, artifacts.ErrUnknownUpload)
	if st := s.Stats(); st.IOJobs != 0 {
		t.Errorf("slots leaked: %+v", st)
	}
}

func TestDeleteAndClose(t *testing.T) {
	dir := t.TempDir()
	s := artifacts.New(artifacts.Config{Dir: dir})
	if err := s.Register(ownerA); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref := createBytes(t, s, ownerA, []byte("abc"), artifacts.FormatText)
	keep := createBytes(t, s, ownerA, []byte("def"), artifacts.FormatText)
	noTemps(t, dir)
	if err := s.Delete(ownerA, ref.ID); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.Delete(ownerA, ref.ID), artifacts.ErrUnknown)
	_, err := s.Read(ctx, ownerA, ref.ID, 0, 1, "text")
	wantErr(t, err, artifacts.ErrUnknown)
	if st := s.Stats(); st.Entries != 1 || st.Bytes != 3 {
		t.Errorf("stats = %+v", st)
	}
	if err := s.StartRun(ownerA, "r"); err != nil {
		t.Fatal(err)
	}
	up, err := s.Begin(ownerA, "r", artifacts.FormatText)
	if err != nil {
		t.Fatal(err)
	}
	noTemps(t, dir)

	s.Close()
	s.Close()
	noTemps(t, dir)
	if st := s.Stats(); st.Entries != 0 || st.Bytes != 0 || st.Uploads != 0 || st.Owners != 0 {
		t.Errorf("stats after close = %+v", st)
	}
	_, err = s.Read(ctx, ownerA, keep.ID, 0, 1, "text")
	wantErr(t, err, artifacts.ErrClosed)
	_, err = s.Append(ownerA, up.UploadID, 0, []byte("x"))
	wantErr(t, err, artifacts.ErrClosed)
	_, err = s.Create(ctx, ownerA, writeFile(t, t.TempDir(), "x", []byte("x")), artifacts.FormatText)
	wantErr(t, err, artifacts.ErrClosed)
	wantErr(t, s.Register("new"), artifacts.ErrClosed)
	noTemps(t, dir)
}

func TestDefaultDirIsTempDir(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "tmp")
	t.Setenv("TMPDIR", tmp)
	s := artifacts.New(artifacts.Config{})
	defer s.Close()
	if err := s.Register(ownerA); err != nil {
		t.Fatal(err)
	}
	src := writeFile(t, t.TempDir(), "x", []byte("x"))
	_, err := s.Create(context.Background(), ownerA, src, artifacts.FormatText)
	wantErr(t, err, artifacts.ErrStorage) // TMPDIR does not exist yet
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, ownerA, src, artifacts.FormatText)
	noTemps(t, tmp)
}

// TestConcurrentUse runs every operation from many goroutines at once, for the race
// detector, against a store small enough to evict all the time.
func TestConcurrentUse(t *testing.T) {
	s, dir := newSmallStore(t, 8, 4096, 1024)
	ctx := context.Background()
	src := t.TempDir()
	var wg sync.WaitGroup
	for g := range 8 {
		owner := ownerA
		if g%2 == 1 {
			owner = ownerB
		}
		path := writeFile(t, src, fmt.Sprint("src", g), []byte(fmt.Sprintf(`{"g":%d,"pad":%q}`, g, strings.Repeat("p", 200))))
		wg.Go(func() {
			run := fmt.Sprint("run", g)
			for i := range 40 {
				ref, err := s.Create(ctx, owner, path, artifacts.FormatJSON)
				if err != nil && !errors.Is(err, artifacts.ErrIOBusy) {
					t.Errorf("Create: %v", err)
					return
				}
				if err == nil {
					s.Read(ctx, owner, ref.ID, 0, 10, "hex")
					s.ForwardValue(ctx, owner, ref.ID, "json")
					if i%5 == 0 {
						s.Save(ctx, owner, ref.ID, filepath.Join(dir, fmt.Sprint("save", g)), true)
					}
					if i%3 == 0 {
						s.Delete(owner, ref.ID)
					}
				}
				if err := s.StartRun(owner, run); err != nil {
					t.Errorf("StartRun: %v", err)
					return
				}
				if up, err := s.Begin(owner, run, artifacts.FormatText); err == nil {
					s.Append(owner, up.UploadID, 0, []byte("hello"))
					if i%2 == 0 {
						s.Commit(ctx, owner, up.UploadID)
					} else {
						s.EndRun(owner, run)
					}
				}
				s.EndRun(owner, run)
				s.Stats()
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Entries > 8 || st.Bytes > 4096 || st.Uploads != 0 || st.IOJobs != 0 || st.Runs != 0 {
		t.Errorf("stats = %+v", st)
	}
}
