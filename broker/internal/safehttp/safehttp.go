package safehttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// DialTimeout bounds the TCP connect of every broker HTTP request (docs/contract.md §8.5).
const DialTimeout = 10 * time.Second

// NewTransport is http.DefaultTransport's configuration with a dialer bounded by
// DialTimeout; each client gets its own, so closing its idle connections touches
// no other client.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	return t
}

// StatusReason says why a response with this status is a failure; "" for 2xx.
func StatusReason(code int) string {
	switch {
	case code/100 == 2:
		return ""
	case code/100 == 3:
		return fmt.Sprintf("HTTP %d: redirect refused", code)
	case code == http.StatusUnauthorized:
		return "HTTP 401: authentication required"
	case code == http.StatusForbidden:
		return "HTTP 403: access denied"
	}
	return fmt.Sprintf("HTTP %d", code)
}

// NetReason classifies a transport failure; the error itself names the host.
func NetReason(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dnsErr):
		return "host not found"
	case errors.As(err, &certErr), errors.As(err, &recErr):
		return "TLS handshake failed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "request cancelled"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "connection timed out"
	}
	return "connection failed"
}

// LimitBody bounds body to limit bytes: once more have been read, reads fail with
// tooLarge, and note (when not nil) is told tooLarge's text.
func LimitBody(body io.ReadCloser, limit int64, tooLarge error, note func(reason string)) io.ReadCloser {
	return &limitedBody{ReadCloser: body, limit: limit, tooLarge: tooLarge, note: note}
}

type limitedBody struct {
	io.ReadCloser
	limit    int64
	tooLarge error
	read     int64
	note     func(string) // nil: nothing to note
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, b.tooLarge
	}
	if room := b.limit + 1 - b.read; int64(len(p)) > room {
		p = p[:room] // one byte past the limit is enough to know
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		if b.note != nil {
			b.note(b.tooLarge.Error())
		}
		return n - 1, b.tooLarge
	}
	return n, err
}
