package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := map[string]string{"PyPI.org.": "pypi.org", "*.pythonhosted.org": "*.pythonhosted.org", "10.0.0.5": "10.0.0.5", "[::1]": "::1", "files_1.example": "files_1.example"}
	for in, want := range good {
		if p, err := Parse(in); err != nil || p.String() != want {
			t.Errorf("Parse(%q) = %v, %v; want %q", in, p, err, want)
		}
	}
	for _, in := range []string{"", "*", "*.", "a b.org", "http://pypi.org", "pypi..org", "*.*.org"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "--allow-domain") {
			t.Errorf("Parse(%q) = %v; want a refusal", in, err)
		}
	}
	ps := Patterns{mustParse(t, "pypi.org"), mustParse(t, "*.pythonhosted.org")}
	for host, want := range map[string]bool{"pypi.org": true, "PYPI.ORG.": true, "evil-pypi.org": false, "files.pythonhosted.org": true,
		"pythonhosted.org": false, "a.b.pythonhosted.org": true, "pypi.org.evil": false} {
		if _, got := ps.Match(host); got != want {
			t.Errorf("Match(%q) = %v, want %v", host, got, want)
		}
	}
}

func mustParse(t *testing.T, s string) Pattern {
	t.Helper()
	p, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startProxy serves an allowed name, pkgs.example.test, from a loopback server that
// the proxy's resolution maps it to.
func startProxy(t *testing.T) (*Proxy, *httptest.Server) {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend saw %s %s", r.Host, r.URL.Path)
	}))
	t.Cleanup(backend.Close)
	p, err := Start(Config{
		Domains: Patterns{mustParse(t, "pkgs.example.test")},
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, backend
}

// TestProxy: a plain request and a CONNECT tunnel reach an allowed host; any other
// host is refused with a message that names the sandbox; no proxy request is 400.
func TestProxy(t *testing.T) {
	p, backend := startProxy(t)
	port := backend.Listener.Addr().(*net.TCPAddr).Port
	proxyURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", p.Port()))
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 10 * time.Second}

	res, err := client.Get(fmt.Sprintf("http://pkgs.example.test:%d/simple/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != fmt.Sprintf("backend saw pkgs.example.test:%d /simple/", port) {
		t.Errorf("allowed GET: %d %q", res.StatusCode, body)
	}

	res, err = client.Get(fmt.Sprintf("http://other.example.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 403 || !strings.Contains(string(body), RefusalPhrase) {
		t.Errorf("refused GET: %d %q", res.StatusCode, body)
	}

	if status, got := tunnel(t, p, fmt.Sprintf("pkgs.example.test:%d", port)); !strings.Contains(status, " 200 ") || !strings.Contains(got, "backend saw") {
		t.Errorf("allowed CONNECT: %q then %q", status, got)
	}
	if status, _ := tunnel(t, p, fmt.Sprintf("127.0.0.1:%d", port)); !strings.Contains(status, " 403 ") || !strings.Contains(status, RefusalPhrase) {
		t.Errorf("CONNECT to an address not allowed: %q", status)
	}

	direct, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", p.Port()))
	if err != nil {
		t.Fatal(err)
	}
	direct.Body.Close()
	if direct.StatusCode != 400 {
		t.Errorf("a request that is no proxy request: %d", direct.StatusCode)
	}
}

// tunnel sends CONNECT target through p and, when it is accepted, one GET inside;
// it returns the CONNECT status line and what the GET answered.
func tunnel(t *testing.T, p *Proxy, target string) (string, string) {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	status, _ := br.ReadString('\n')
	if !strings.Contains(status, " 200 ") {
		return status, ""
	}
	for line, _ := br.ReadString('\n'); line != "\r\n" && line != ""; line, _ = br.ReadString('\n') {
	}
	fmt.Fprintf(c, "GET /inside HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	rest, _ := io.ReadAll(br)
	return status, string(rest)
}

// TestResolveKeepsLoopbackOut: the system's resolution never leads a domain name to
// a loopback address (an allowed name rebound to 127.0.0.1 would reach the user's
// local services); a pattern that names a loopback host itself may.
func TestResolveKeepsLoopbackOut(t *testing.T) {
	p := &Proxy{}
	if _, err := p.resolve(t.Context(), "127.0.0.1", mustParse(t, "*.example.test")); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a loopback address for a name pattern: %v", err)
	}
	if addrs, err := p.resolve(t.Context(), "127.0.0.1", mustParse(t, "127.0.0.1")); err != nil || len(addrs) != 1 {
		t.Errorf("an address pattern: %v, %v", addrs, err)
	}
}
