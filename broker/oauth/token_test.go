package oauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/iota-uz/repl-mcp/internal/oauthfixture"
)

func TestOAuthConcurrentRefreshSpendsTheRefreshTokenOnce(t *testing.T) {
	fx := oauthfixture.New(t, oauthfixture.Options{})
	e := oauthEntry(fx, t.TempDir())
	loginForTest(t, e)
	file := e.OAuth.CredentialFile
	g, err := LoadGrant(file)
	if err != nil {
		t.Fatal(err)
	}
	g.TokenReceivedAt -= 2 * 3600 // long expired
	if err := SaveGrant(file, g); err != nil {
		t.Fatal(err)
	}
	// Two sources, as two repl-mcp processes would hold: each loaded the
	// expired grant before either refreshed.
	var srcs []Source
	for range 2 {
		srcs = append(srcs, NewSource(e, NewClient(http.DefaultTransport), nil))
	}
	var wg sync.WaitGroup
	tokens, errs := make([]string, 2), make([]error, 2)
	for i, src := range srcs {
		wg.Go(func() { tokens[i], errs[i] = src.Token(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := fx.Grants("refresh_token"); n != 1 {
		t.Fatalf("%d refresh_token grants, want 1: the second process must reuse the first's refresh", n)
	}
	if tokens[0] != tokens[1] {
		t.Fatal("the two processes use different access tokens")
	}
}

// TestOAuthResponsesAreBounded: a response over 64 KiB is refused, and the message
// names that bound; one of 40 KiB, over any smaller bound, is read.
func TestOAuthResponsesAreBounded(t *testing.T) {
	size := oauthBodyLimit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"` + strings.Repeat("a", size) + `","token_type":"Bearer"}`))
	}))
	defer srv.Close()
	_, err := postForm(t.Context(), NewClient(http.DefaultTransport), srv.URL+"/token", url.Values{}, "id", "")
	if !errors.Is(err, errOAuthBodyTooLarge) {
		t.Fatalf("error = %v, want the 64 KiB bound", err)
	}
	if detail, _ := tokenRequestDetail(err); detail != "the token endpoint's answer exceeds 64 KiB" {
		t.Fatalf("detail = %q", detail)
	}
	size = 40 << 10
	if _, err := postForm(t.Context(), NewClient(http.DefaultTransport), srv.URL+"/token", url.Values{}, "id", ""); errors.Is(err, errOAuthBodyTooLarge) {
		t.Fatalf("a 40 KiB answer: %v", err)
	}
}
