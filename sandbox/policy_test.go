package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckRefuses: a kernel without what a policy needs refuses it in one line that
// names what is missing, and a weaker kernel that still enforces the rest says what
// it leaves out; nothing is silently weaker.
func TestCheckRefuses(t *testing.T) {
	ww := &Policy{Mode: WorkspaceWrite, WritableRoots: []string{"/p"}}
	proxied := &Policy{Mode: WorkspaceWrite, WritableRoots: []string{"/p"}, ProxyPort: 3128}
	open := &Policy{Mode: WorkspaceWrite, WritableRoots: []string{"/p"}, Network: true}
	full := Kernel{OS: "linux", LandlockABI: 7, Seccomp: true}
	refusals := []struct {
		k    Kernel
		p    *Policy
		want string
	}{
		{Kernel{OS: "darwin"}, ww, "needs Linux"},
		{Kernel{OS: "linux", LandlockABI: 0, Seccomp: true}, ww, "no Landlock"},
		{Kernel{OS: "linux", LandlockABI: 7}, ww, "no seccomp"},
		{Kernel{OS: "linux", LandlockABI: 3, Seccomp: true}, proxied, "--allow-domain needs Landlock ABI 4"},
	}
	for _, r := range refusals {
		_, err := r.k.Check(WorkspaceWrite, r.p)
		if err == nil || !strings.Contains(err.Error(), r.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: err = %v, want one line with %q", r.k, err, r.want)
		}
	}
	if e, err := full.Check(WorkspaceWrite, proxied); err != nil || len(e.NotEnforced)+len(e.Limits) != 0 || e.LandlockABI != 7 {
		t.Errorf("ABI 7: %+v, %v; want everything enforced", e, err)
	}
	e, err := Kernel{OS: "linux", LandlockABI: 5, Seccomp: true}.Check(WorkspaceWrite, open)
	if err != nil || len(e.NotEnforced) != 2 || !strings.Contains(e.NotEnforced[0], "signals") || !strings.Contains(e.NotEnforced[1], "abstract Unix") {
		t.Errorf("ABI 5 with the network open: %+v, %v; want signals and abstract sockets named", e, err)
	}
	e, err = Kernel{OS: "linux", LandlockABI: 1, Seccomp: true}.Check(ReadOnly, ww)
	if err != nil || len(e.NotEnforced) != 1 || len(e.Limits) != 2 {
		t.Errorf("ABI 1, network off: %+v, %v; want signals not enforced, refer and truncate limited", e, err)
	}
}

// codexMeta reads a recorded policy of Codex 0.171.0 (testdata/codex-*.json, as it
// sent it to a server advertising the capability) with its cwd at cwd.
func codexMeta(t *testing.T, name, cwd, extra string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "codex-"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("@CWD@", cwd, "@EXTRA@", extra).Replace(string(data))
	var state any
	if err := json.Unmarshal([]byte(text), &state); err != nil {
		t.Fatal(err)
	}
	return map[string]any{CodexMetaKey: state, CodexLegacyMetaKey: state}
}

// TestFromCodex maps what Codex sent in each of its modes: bypassed is full access;
// read-only writes nothing, network off; workspace-write writes its cwd, extra
// roots, /tmp and $TMPDIR, keeps .git writable and says so, and opens the network
// only when Codex does. Missing or unreadable policies fail closed.
func TestFromCodex(t *testing.T) {
	cwd, extra, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := CodexContext{TempDir: tmp, ProxyPort: 3128, Domains: []string{"pypi.org"}}
	if p, err := FromCodex(codexMeta(t, "bypassed", cwd, extra), ctx); p != nil || err != nil {
		t.Errorf("bypassed: %+v, %v; want full access", p, err)
	}
	p, err := FromCodex(codexMeta(t, "read-only", cwd, extra), ctx)
	if err != nil || p.Mode != ReadOnly || !p.Codex || p.Network || p.ProxyPort != 3128 || !slices.Equal(p.WritableRoots, SystemWritable) {
		t.Errorf("read-only: %+v, %v", p, err)
	}
	p, err = FromCodex(codexMeta(t, "workspace-write", cwd, extra), ctx)
	wantRoots := append([]string{cwd, extra, "/tmp", tmp}, SystemWritable...)
	if err != nil || p.Mode != WorkspaceWrite || p.Network || !slices.Equal(p.WritableRoots, wantRoots) {
		t.Fatalf("workspace-write: %+v, %v; want roots %q", p, err, wantRoots)
	}
	if len(p.NotEnforced) != 1 || !strings.Contains(p.NotEnforced[0], filepath.Join(cwd, ".git")+" read-only") {
		t.Errorf("workspace-write: not enforced %q; want the existing .git alone", p.NotEnforced)
	}
	p, err = FromCodex(codexMeta(t, "workspace-write-network", cwd, extra), ctx)
	if err != nil || !p.Network || p.ProxyPort != 0 {
		t.Errorf("workspace-write with network: %+v, %v; want the network open", p, err)
	}
	if p.Name() != "Codex's workspace-write" {
		t.Errorf("name %q", p.Name())
	}

	bad := []struct {
		meta map[string]any
		want string
	}{
		{map[string]any{"progressToken": 1}, "missing"},
		{map[string]any{CodexMetaKey: "x"}, "no permissionProfile"},
		{map[string]any{CodexMetaKey: map[string]any{"permissionProfile": map[string]any{"type": "sandboxed"}}}, `type "sandboxed"`},
		{map[string]any{CodexMetaKey: map[string]any{"permissionProfile": map[string]any{"type": "disabled", "extra": 1}}}, "unknown field"},
		{map[string]any{CodexMetaKey: map[string]any{"permissionProfile": map[string]any{"type": "managed", "network": "restricted",
			"file_system": map[string]any{"type": "restricted", "entries": []any{}}}}}, "keeps reads open"},
		{map[string]any{CodexMetaKey: map[string]any{"permissionProfile": map[string]any{"type": "managed", "network": "proxied",
			"file_system": map[string]any{"type": "unrestricted"}}}}, `network "proxied"`},
		{map[string]any{CodexMetaKey: map[string]any{"permissionProfile": map[string]any{"type": "disabled"}},
			CodexLegacyMetaKey: map[string]any{"permissionProfile": map[string]any{"type": "managed"}}}, "differ"},
	}
	for _, b := range bad {
		if p, err := FromCodex(b.meta, ctx); p != nil || err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), "inherit-codex") {
			t.Errorf("%v: %+v, %v; want a refusal naming %q", b.meta, p, err, b.want)
		}
	}
}

// TestPolicyIDs: the cache key ignores the proxy's port (a new server has another)
// but not the network, the roots or the domains.
func TestPolicyIDs(t *testing.T) {
	a := Settings{Mode: WorkspaceWrite, Project: "/p", ProxyPort: 1000, Domains: []string{"a.example"}}.Policy()
	b := Settings{Mode: WorkspaceWrite, Project: "/p", ProxyPort: 2000, Domains: []string{"a.example"}}.Policy()
	c := Settings{Mode: WorkspaceWrite, Project: "/p"}.Policy()
	if a.ID() == b.ID() || a.CacheKey() != b.CacheKey() || a.CacheKey() == c.CacheKey() {
		t.Errorf("ids %q %q, cache keys %q %q %q", a.ID(), b.ID(), a.CacheKey(), b.CacheKey(), c.CacheKey())
	}
	if (*Policy)(nil).ID() != "" || (Settings{Mode: FullAccess}).Policy() != nil || (Settings{Mode: InheritCodex}).Policy() != nil {
		t.Error("full access and inherit-codex have no fixed policy")
	}
	if got := (Settings{Mode: ReadOnly}).Policy().WritableRoots; !slices.Equal(got, SystemWritable) {
		t.Errorf("read-only roots %q", got)
	}
}
