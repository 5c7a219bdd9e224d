package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of the proxy.
const (
	headerTimeout = 10 * time.Second
	dialTimeout   = 30 * time.Second
	idleTimeout   = 2 * time.Minute
	maxHeader     = 64 << 10
)

// RefusalPhrase is in every refusal the proxy writes (the CONNECT status line, a
// plain request's body), so that a client's error message names who refused.
const RefusalPhrase = "not allowed by repl-mcp's sandbox"

// Config says what the proxy admits.
type Config struct {
	// Domains are the --allow-domain patterns (Parse).
	Domains Patterns
	// Resolve, when set, replaces the proxy's name resolution (tests map a name to
	// a loopback server with it). The default asks the system's resolver and drops
	// loopback and unspecified addresses unless the pattern that admitted the host
	// is itself an address or "localhost".
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	Logger  *slog.Logger
}

// Proxy is a running allowed-domains proxy on a loopback port.
type Proxy struct {
	cfg   Config
	ln    net.Listener
	srv   *http.Server
	fwd   *httputil.ReverseProxy
	serve sync.WaitGroup

	mu      sync.Mutex
	tunnels map[net.Conn]struct{} // hijacked CONNECT connections, closed by Close
}

// Start listens on 127.0.0.1 on a free port and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("allowed-domains proxy: listen on loopback: %w", err)
	}
	p := &Proxy{cfg: cfg, ln: ln, tunnels: map[net.Conn]struct{}{}}
	dialer := &net.Dialer{Timeout: dialTimeout}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return p.dial(ctx, dialer, addr)
		},
		IdleConnTimeout:     idleTimeout,
		TLSHandshakeTimeout: dialTimeout,
	}
	p.fwd = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = r.In.URL
			r.Out.Host = r.In.Host
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "repl-mcp allowed-domains proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeader,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug)}
	p.serve.Go(func() { p.srv.Serve(ln) })
	return p, nil
}

// Port is the loopback port the proxy listens on.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Close stops the proxy and closes every connection it holds.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.mu.Lock()
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.serve.Wait()
	return err
}

// ServeHTTP admits CONNECT tunnels and absolute-form requests to allowed hosts and
// refuses everything else with 403 (a host not allowed) or 400 (no proxy request).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "repl-mcp allowed-domains proxy: send proxy requests (an absolute URL, or CONNECT)", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, "repl-mcp allowed-domains proxy: only http:// URLs go as plain requests; https goes through CONNECT", http.StatusBadRequest)
		return
	}
	if _, ok := p.cfg.Domains.Match(r.URL.Hostname()); !ok {
		p.refused(r.URL.Hostname())
		http.Error(w, refusal(r.URL.Hostname()), http.StatusForbidden)
		return
	}
	p.fwd.ServeHTTP(w, r)
}

func refusal(host string) string {
	return fmt.Sprintf("host %s is %s (--allow-domain)", host, RefusalPhrase)
}

func (p *Proxy) refused(host string) {
	p.cfg.Logger.Debug("allowed-domains proxy refused a host", "host", host)
}

// connect opens a tunnel to an allowed host:port and copies bytes both ways until
// either side closes.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "repl-mcp allowed-domains proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	p.track(client, true)
	defer func() {
		client.Close()
		p.track(client, false)
	}()
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		writeStatus(client, "400 CONNECT needs host:port")
		return
	}
	if _, ok := p.cfg.Domains.Match(host); !ok {
		p.refused(host)
		writeStatus(client, "403 Forbidden: "+refusal(host))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), dialTimeout)
	upstream, err := p.dial(ctx, &net.Dialer{}, r.Host)
	cancel()
	if err != nil {
		writeStatus(client, "502 Bad Gateway: "+oneLine(err.Error()))
		return
	}
	p.track(upstream, true)
	defer func() {
		upstream.Close()
		p.track(upstream, false)
	}()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { copyHalf(upstream, buf.Reader); done <- struct{}{} }()
	go func() { copyHalf(client, upstream); done <- struct{}{} }()
	<-done
}

// copyHalf copies src to dst, then half-closes dst's writing side when it can.
func copyHalf(dst io.Writer, src io.Reader) {
	io.Copy(dst, src)
	if c, ok := dst.(interface{ CloseWrite() error }); ok {
		c.CloseWrite()
	} else if c, ok := dst.(io.Closer); ok {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.tunnels[c] = struct{}{}
	} else {
		delete(p.tunnels, c)
	}
}

// writeStatus answers a hijacked CONNECT with status and no body.
func writeStatus(c net.Conn, status string) {
	c.SetWriteDeadline(time.Now().Add(headerTimeout))
	fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status)
}

func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }

// dial connects to addr (host:port) when its host is allowed, at the addresses
// the proxy's resolution gives: never at an address the host did not resolve to.
func (p *Proxy) dial(ctx context.Context, d *net.Dialer, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pattern, ok := p.cfg.Domains.Match(host)
	if !ok {
		return nil, errors.New(refusal(host))
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("bad port %q", port)
	}
	addrs, err := p.resolve(ctx, host, pattern)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// resolve is host's addresses by the configured resolution, or the system's with
// loopback and unspecified addresses dropped unless pattern names them itself.
func (p *Proxy) resolve(ctx context.Context, host string, pattern Pattern) ([]netip.Addr, error) {
	if p.cfg.Resolve != nil {
		return p.cfg.Resolve(ctx, host)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		found, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		addrs = found
	}
	kept := addrs[:0:0]
	for _, a := range addrs {
		if pattern.Local() || !(a.Unmap().IsLoopback() || a.IsUnspecified()) {
			kept = append(kept, a.Unmap())
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%s resolves only to loopback or unspecified addresses, which the proxy does not reach for a domain name", host)
	}
	return kept, nil
}
