// Package oauth owns the broker's own OAuth grants (docs/contract.md §1.7, §8.7): the
// private credential store of authorization-code grants, the bearer token an HTTP
// server entry with an `oauth` object sends (a client-credentials grant kept in
// memory, or the stored grant, refreshed under the store's lock), and the
// interactive `repl-mcp --oauth-login SERVER` that obtains a grant in a browser.
// Its errors never hold a token, a secret, a code, a URL or a response body.
//
// It does not own the MCP connection the token is for, nor when to connect: the
// broker's HTTP transport asks a [Source] for a token before the handshake and
// before each request. It never borrows a client's tokens. A Source starts no
// goroutine; [Login] runs its loopback listener only until it returns, and main
// runs Login instead of the server. Nothing else needs stopping.
//
// Its contract is docs/contract.md §8.7 and, for the login, §1.7.
package oauth
