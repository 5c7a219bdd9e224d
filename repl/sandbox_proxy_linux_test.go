package repl

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/iota-uz/repl-mcp/sandbox"
	"github.com/iota-uz/repl-mcp/sandbox/proxy"
)

// The allowed domain of the tests: the proxy's resolution maps it to the loopback
// servers below, which stand in for a package index and a web site.
const allowedHost = "pkgs.example.test"

// demoWheel is a small pure-Python wheel, sbxdemo 0.1, whose module holds VALUE.
func demoWheel(t *testing.T) []byte {
	t.Helper()
	files := map[string]string{
		"sbxdemo/__init__.py":                 "VALUE = 'installed through the proxy'\n",
		"sbxdemo-0.1.dist-info/METADATA":      "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 0.1\n",
		"sbxdemo-0.1.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: repl-mcp-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"sbxdemo-0.1.dist-info/top_level.txt": "sbxdemo\n",
	}
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"sbxdemo/__init__.py", "sbxdemo-0.1.dist-info/METADATA", "sbxdemo-0.1.dist-info/WHEEL", "sbxdemo-0.1.dist-info/top_level.txt"} {
		w, _ := zw.Create(name)
		w.Write([]byte(files[name]))
		sum := sha256.Sum256([]byte(files[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
	}
	record.WriteString("sbxdemo-0.1.dist-info/RECORD,,\n")
	w, _ := zw.Create("sbxdemo-0.1.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// packageIndex serves a PEP 503 simple index holding demoWheel, and /hello.
func packageIndex(t *testing.T) *httptest.Server {
	t.Helper()
	wheel := demoWheel(t)
	sum := sha256.Sum256(wheel)
	const file = "sbxdemo-0.1-py3-none-any.whl"
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/sbxdemo/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, file, hex.EncodeToString(sum[:]), file)
	})
	mux.HandleFunc("/files/"+file, func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestSandboxAllowedDomains: under workspace-write with an allowed domain, a cell
// reaches it over HTTP and HTTPS through the proxy (a loopback server standing in for
// it), %pip installs from a package index there, a host not allowed is refused by
// the proxy, and the same server by its address, around the proxy, is refused by the
// sandbox.
func TestSandboxAllowedDomains(t *testing.T) {
	index := packageIndex(t)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello over tls") }))
	t.Cleanup(secure.Close)
	pattern, err := proxy.Parse(allowedHost)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.Start(proxy.Config{Domains: proxy.Patterns{pattern}, Resolve: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	m, _ := sandboxManager(t, realPython(t), sandbox.Settings{Mode: sandbox.WorkspaceWrite, Domains: []string{allowedHost}, ProxyPort: p.Port()}, false)
	s := m.Default()
	port := func(srv *httptest.Server) int { return srv.Listener.Addr().(*net.TCPAddr).Port }

	code := fmt.Sprintf(`%%pip install --no-input --disable-pip-version-check --index-url http://%[1]s:%[2]d/simple/ --trusted-host %[1]s --target site sbxdemo
import json, socket, ssl, sys, urllib.request, urllib.error
sys.path.insert(0, "site")
import sbxdemo
out = {"installed": sbxdemo.VALUE}
out["http"] = urllib.request.urlopen("http://%[1]s:%[2]d/hello", timeout=10).read().decode()
out["https"] = urllib.request.urlopen("https://%[1]s:%[3]d/", timeout=10, context=ssl._create_unverified_context()).read().decode()
try:
    urllib.request.urlopen("http://other.example.test:%[2]d/hello", timeout=10)
except urllib.error.HTTPError as e:
    out["other"] = "%%d %%s" %% (e.code, e.read().decode())
try:
    socket.create_connection(("127.0.0.1", %[2]d), timeout=5)
except OSError as e:
    out["direct"] = type(e).__name__
out`, allowedHost, port(index), port(secure))
	res := s.Execute(t.Context(), ExecRequest{Code: code, Timeout: 120e9})
	if !res.Success {
		t.Fatalf("the cell failed: %s\nstdout: %s\nstderr: %s", errText(res), res.Stdout, res.Stderr)
	}
	var got map[string]string
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatalf("value %s: %v", res.Value, err)
	}
	want := map[string]string{
		"installed": "installed through the proxy",
		"http":      fmt.Sprintf("hello from %s:%d", allowedHost, port(index)),
		"https":     "hello over tls",
		"direct":    "PermissionError",
	}
	checkProbe(t, got, want)
	if !strings.HasPrefix(got["other"], "403 ") || !strings.Contains(got["other"], proxy.RefusalPhrase) {
		t.Errorf("a host not allowed: %q", got["other"])
	}
	h := s.Health().Sandbox
	if !strings.Contains(h.Network, fmt.Sprintf("127.0.0.1:%d", p.Port())) || len(h.AllowedDomains) != 1 {
		t.Errorf("health: %+v", h)
	}
}
