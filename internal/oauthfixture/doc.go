// Package oauthfixture is an OAuth-protected MCP server for tests: one httptest
// server on 127.0.0.1 that is both the authorization server and the protected
// resource, so broker and end-to-end tests drive real OAuth flows (discovery,
// dynamic client registration, authorization code with PKCE, refresh, client
// credentials) against a real Streamable HTTP MCP endpoint. It owns only that
// server; [New] starts it and the test's cleanup closes it.
//
// Endpoints, relative to [Server.URL] (which is also the issuer):
//
//   - /.well-known/oauth-protected-resource/mcp: RFC 9728 metadata for the MCP
//     endpoint (resource URL+"/mcp"); /.well-known/oauth-protected-resource serves
//     the root's (resource URL). Both name URL as the authorization server.
//   - /.well-known/oauth-authorization-server: RFC 8414 metadata with S256 PKCE,
//     the registration endpoint and authorization_response_iss_parameter_supported
//     (unless Options.NoIssParameter).
//   - /register: RFC 7591 dynamic client registration; a public client
//     (token_endpoint_auth_method none) unless RequireClientSecret is set, then a
//     client_secret_post client with a secret.
//   - /authorize: checks the client, its redirect URI, and an S256 code challenge,
//     then answers 302 to redirect_uri with code, state and iss. WrongState and
//     WrongIssuer tamper the state and iss it sends back.
//   - /token: authorization_code (single-use code, client, redirect URI, PKCE S256
//     verifier, resource = the MCP endpoint), refresh_token (rotates the refresh
//     token; RejectRefresh refuses it) and client_credentials (a client with a
//     secret; resource = the MCP endpoint). Clients authenticate with
//     client_secret_basic or client_secret_post.
//   - /mcp: a go-sdk Streamable HTTP MCP server with one tool, echo {text}, that
//     requires "Authorization: Bearer <an access token this server issued>" and
//     answers 401 with WWW-Authenticate resource_metadata otherwise.
//     ProtocolErrorOnce fails the next tools/call with JSON-RPC -32602.
//
// Counters ([Server.Grants], [Server.Registrations], [Server.Authorizations],
// [Server.MCPRequests]) and records ([Server.LastAuthorization],
// [Server.TokenRequests], [Server.LastRegistration]) let tests see what a client
// did. Knobs are atomic, so a test may flip them at any time. Codes and access tokens
// expire by Options.Now; a test that needs a token to expire shares a [Clock] with the
// client and advances it, instead of sleeping through the lifetime.
//
// docs/design.md ("Tests") says where the fixture is used; the flows it plays are
// docs/contract.md §8.7.
package oauthfixture
