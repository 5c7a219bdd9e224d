// A server entry's rules (entry.go): validation of each field, and server names.

package registry

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestEntryValidation(t *testing.T) {
	type check func(t *testing.T, f *fixture, e Entry)
	cases := []struct {
		name    string
		entry   string
		env     map[string]string
		wantErr string // substring; "" means success
		creds   bool   // ConfigError.Credentials expected
		check   check
	}{
		{name: "stdio inferred", entry: `{"command":"echo","args":["a","b"]}`, check: func(t *testing.T, f *fixture, e Entry) {
			if e.Transport != TransportStdio || e.Command != "echo" || !reflect.DeepEqual(e.Args, []string{"a", "b"}) {
				t.Errorf("entry = %+v", e)
			}
			if e.Cwd != f.project {
				t.Errorf("Cwd = %q, want the registry directory %q", e.Cwd, f.project)
			}
			if e.Restricted || !e.ToolAllowed("anything") {
				t.Errorf("no allowedTools must allow every tool")
			}
			if e.Kind != SourceProject || e.Source != filepath.Join(f.project, ".mcp.json") || e.Name != "s" {
				t.Errorf("origin = %q %q %q", e.Kind, e.Source, e.Name)
			}
		}},
		{name: "stdio explicit", entry: `{"type":"stdio","command":"echo"}`, check: func(t *testing.T, f *fixture, e Entry) {
			if e.Transport != TransportStdio {
				t.Errorf("Transport = %q", e.Transport)
			}
		}},
		{name: "http inferred", entry: `{"url":"https://example.com/mcp"}`, check: func(t *testing.T, f *fixture, e Entry) {
			if e.Transport != TransportHTTP || e.URL != "https://example.com/mcp" || e.Cwd != "" {
				t.Errorf("entry = %+v", e)
			}
		}},
		{name: "http explicit", entry: `{"type":"http","url":"http://127.0.0.1:8080/mcp"}`, check: func(t *testing.T, f *fixture, e Entry) {
			if e.Transport != TransportHTTP {
				t.Errorf("Transport = %q", e.Transport)
			}
		}},
		{name: "streamable-http", entry: `{"type":"streamable-http","url":"https://h/"}`, check: func(t *testing.T, f *fixture, e Entry) {
			if e.Transport != TransportHTTP {
				t.Errorf("Transport = %q", e.Transport)
			}
		}},
		{name: "expansion stdio", entry: `{"command":"${BIN}","args":["--k=${A}x${A}","$HOME","$","${"] ,"env":{"K":"${SECRET}","L":"plain"},"cwd":"${SUB}"}`,
			env:     map[string]string{"BIN": "/bin/tool", "A": "1", "SECRET": "v", "SUB": "sub"},
			wantErr: "Unclosed environment placeholder in MCP config"},
		{name: "expansion stdio ok", entry: `{"command":"${BIN}","args":["--k=${A}x${A}","$HOME","$"],"env":{"K":"${SECRET}","L":"plain"},"cwd":"${SUB}"}`,
			env: map[string]string{"BIN": "/bin/tool", "A": "1", "SECRET": "v", "SUB": ".."},
			check: func(t *testing.T, f *fixture, e Entry) {
				if e.Command != "/bin/tool" || !reflect.DeepEqual(e.Args, []string{"--k=1x1", "$HOME", "$"}) {
					t.Errorf("command/args = %q %q", e.Command, e.Args)
				}
				if !reflect.DeepEqual(e.Env, map[string]string{"K": "v", "L": "plain"}) {
					t.Errorf("env = %q", e.Env)
				}
				if e.Cwd != filepath.Dir(f.project) {
					t.Errorf("Cwd = %q", e.Cwd)
				}
			}},
		{name: "absolute cwd", entry: `{"command":"x","cwd":"/"}`, check: func(t *testing.T, f *fixture, e Entry) {
			if e.Cwd != "/" {
				t.Errorf("Cwd = %q", e.Cwd)
			}
		}},
		{name: "headers", entry: `{"url":"https://h/${P}","headers":{"authorization":"Bearer ${TOKEN}","x-custom-id":"v"}}`,
			env: map[string]string{"TOKEN": "tok", "P": "mcp"},
			check: func(t *testing.T, f *fixture, e Entry) {
				want := map[string]string{"Authorization": "Bearer tok", "X-Custom-Id": "v"}
				if e.URL != "https://h/mcp" || !reflect.DeepEqual(e.Headers, want) {
					t.Errorf("url/headers = %q %q", e.URL, e.Headers)
				}
			}},
		{name: "allowedTools", entry: `{"command":"x","allowedTools":["a","b","a"]}`, check: func(t *testing.T, f *fixture, e Entry) {
			if !e.Restricted || !reflect.DeepEqual(e.AllowedTools, []string{"a", "b"}) || !e.ToolAllowed("b") || e.ToolAllowed("c") {
				t.Errorf("allowlist = %v %q", e.Restricted, e.AllowedTools)
			}
		}},
		{name: "allowedTools empty allows none", entry: `{"command":"x","allowedTools":[]}`, check: func(t *testing.T, f *fixture, e Entry) {
			if !e.Restricted || e.ToolAllowed("a") {
				t.Errorf("empty allowedTools must allow nothing")
			}
		}},
		{name: "allowedTools star is a literal name", entry: `{"command":"x","allowedTools":["*"]}`, check: func(t *testing.T, f *fixture, e Entry) {
			if !e.ToolAllowed("*") || e.ToolAllowed("other") {
				t.Errorf("the contract has no wildcard")
			}
		}},
		{name: "allowedTools 400 bytes", entry: `{"command":"x","allowedTools":["` + strings.Repeat("t", 400) + `"]}`},
		{name: "oauth client credentials", entry: `{"url":"https://h/","oauth":{"grantType":"client_credentials","clientId":"${CID}","clientSecret":"${CSEC}","scopes":["read","write"]}}`,
			env: map[string]string{"CID": "id", "CSEC": "sec"},
			check: func(t *testing.T, f *fixture, e Entry) {
				want := &OAuthConfig{GrantType: GrantClientCredentials, ClientID: "id", ClientSecret: "sec", Scopes: []string{"read", "write"}}
				if !reflect.DeepEqual(e.OAuth, want) {
					t.Errorf("oauth = %+v", e.OAuth)
				}
			}},
		{name: "oauth authorization code", entry: `{"url":"https://h/","oauth":{"credentialFile":"creds/${N}.json","redirectPort":8765}}`,
			env: map[string]string{"N": "srv"},
			check: func(t *testing.T, f *fixture, e Entry) {
				want := &OAuthConfig{GrantType: GrantAuthorizationCode, CredentialFile: filepath.Join(f.project, "creds", "srv.json"), RedirectPort: 8765}
				if !reflect.DeepEqual(e.OAuth, want) {
					t.Errorf("oauth = %+v", e.OAuth)
				}
			}},
		{name: "oauth absolute credential file, port 0", entry: `{"url":"https://h/","oauth":{"grantType":"authorization_code","credentialFile":"/c.json","redirectPort":0}}`,
			check: func(t *testing.T, f *fixture, e Entry) {
				if e.OAuth.CredentialFile != "/c.json" || e.OAuth.RedirectPort != 0 {
					t.Errorf("oauth = %+v", e.OAuth)
				}
			}},
		{name: "brokerAllowed accepted in project", entry: `{"command":"x","brokerAllowed":true}`},
		{name: "disabled false", entry: `{"command":"x","disabled":false}`},

		{name: "unknown field", entry: `{"command":"x","bogus":1}`, wantErr: `Invalid configuration for server s; check documented fields and types: unknown field "bogus"`},
		{name: "unknown oauth field", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","extra":true}}`, wantErr: `unknown field "oauth.extra"`},
		{name: "entry not object", entry: `"echo"`, wantErr: "Invalid configuration for server s"},
		{name: "entry null", entry: `null`, wantErr: "Invalid configuration for server s"},
		{name: "sse", entry: `{"type":"sse","url":"https://h/"}`, wantErr: "Server s: unsupported transport; use stdio or streamable-http"},
		{name: "type not string", entry: `{"type":1,"command":"x"}`, wantErr: `field "type" must be a string`},
		{name: "stdio without command", entry: `{"type":"stdio"}`, wantErr: "stdio servers require a non-empty command"},
		{name: "empty command", entry: `{"command":""}`, wantErr: "stdio servers require a non-empty command"},
		{name: "null command", entry: `{"command":null}`, wantErr: `field "command" must be a string`},
		{name: "command number", entry: `{"command":7}`, wantErr: `field "command" must be a string`},
		{name: "args not array", entry: `{"command":"x","args":"a"}`, wantErr: `field "args" must be an array of strings`},
		{name: "args element number", entry: `{"command":"x","args":["a",1]}`, wantErr: `field "args" must be an array of strings`},
		{name: "args element null", entry: `{"command":"x","args":[null]}`, wantErr: `field "args" must be an array of strings`},
		{name: "env not object", entry: `{"command":"x","env":["K=V"]}`, wantErr: `field "env" must be an object of strings`},
		{name: "env value number", entry: `{"command":"x","env":{"K":1}}`, wantErr: `field "env" must be an object of strings`},
		{name: "env name with =", entry: `{"command":"x","env":{"K=V":"v"}}`, wantErr: "env names must be non-empty"},
		{name: "env name empty", entry: `{"command":"x","env":{"":"v"}}`, wantErr: "env names must be non-empty"},
		{name: "NUL in arg", entry: `{"command":"x","args":["a\u0000b"]}`, wantErr: `field "args" must not contain NUL`},
		{name: "cwd missing", entry: `{"command":"x","cwd":"nope"}`, wantErr: "cwd must be an existing directory"},
		{name: "cwd is a file", entry: `{"command":"x","cwd":".mcp.json"}`, wantErr: "cwd must be an existing directory"},
		{name: "cwd empty", entry: `{"command":"x","cwd":""}`, wantErr: "cwd must be a non-empty path"},
		{name: "http without url", entry: `{}`, wantErr: "http servers require a url"},
		{name: "http empty url", entry: `{"type":"http","url":""}`, wantErr: "http servers require a url"},
		{name: "url ftp", entry: `{"url":"ftp://h/"}`, wantErr: "Server s: URL requires HTTP(S), host, and no embedded credentials"},
		{name: "url no host", entry: `{"url":"https:///x"}`, wantErr: "URL requires HTTP(S), host"},
		{name: "url port only", entry: `{"url":"https://:443/x"}`, wantErr: "URL requires HTTP(S), host"},
		{name: "url relative", entry: `{"url":"/mcp"}`, wantErr: "URL requires HTTP(S), host"},
		{name: "url userinfo", entry: `{"url":"https://u:p@h/"}`, wantErr: "no embedded credentials"},
		{name: "url user only", entry: `{"url":"https://u@h/"}`, wantErr: "no embedded credentials"},
		{name: "stdio with url", entry: `{"command":"x","url":"https://h/"}`, wantErr: `field "url" is not valid for the stdio transport`},
		{name: "stdio with headers", entry: `{"type":"stdio","command":"x","headers":{}}`, wantErr: `field "headers" is not valid for the stdio transport`},
		{name: "stdio with oauth", entry: `{"command":"x","oauth":{}}`, wantErr: `field "oauth" is not valid for the stdio transport`},
		{name: "http with command", entry: `{"type":"http","url":"https://h/","command":"x"}`, wantErr: `field "command" is not valid for the http transport`},
		{name: "http with args", entry: `{"url":"https://h/","args":[]}`, wantErr: `field "args" is not valid for the http transport`},
		{name: "http with env", entry: `{"url":"https://h/","env":{}}`, wantErr: `field "env" is not valid for the http transport`},
		{name: "http with cwd", entry: `{"url":"https://h/","cwd":"."}`, wantErr: `field "cwd" is not valid for the http transport`},
		{name: "headers not object", entry: `{"url":"https://h/","headers":"a: b"}`, wantErr: `field "headers" must be an object of strings`},
		{name: "empty authorization", entry: `{"url":"https://h/","headers":{"Authorization":""}}`, wantErr: "Server s: empty authorization header; configure credentials explicitly", creds: true},
		{name: "bare bearer", entry: `{"url":"https://h/","headers":{"authorization":" bearer  "}}`, wantErr: "empty authorization header", creds: true},
		{name: "reserved header", entry: `{"url":"https://h/","headers":{"accept":"text/plain"}}`, wantErr: `header "Accept" is managed by the broker`},
		{name: "reserved session header", entry: `{"url":"https://h/","headers":{"MCP-Session-Id":"x"}}`, wantErr: `header "Mcp-Session-Id" is managed by the broker`},
		{name: "bad header name", entry: `{"url":"https://h/","headers":{"bad name":"v"}}`, wantErr: "valid HTTP header names"},
		{name: "bad header value", entry: `{"url":"https://h/","headers":{"X-A":"a\nb"}}`, wantErr: `header "X-A" has an invalid HTTP value`},
		{name: "duplicate header", entry: `{"url":"https://h/","headers":{"X-A":"1","x-a":"2"}}`, wantErr: `header "X-A" is given more than once`},
		{name: "oauth with authorization", entry: `{"url":"https://h/","headers":{"Authorization":"Bearer t"},"oauth":{"credentialFile":"c"}}`, wantErr: "oauth conflicts with an Authorization header"},
		{name: "oauth not object", entry: `{"url":"https://h/","oauth":true}`, wantErr: `field "oauth" must be an object`},
		{name: "oauth bad grant", entry: `{"url":"https://h/","oauth":{"grantType":"password","credentialFile":"c"}}`, wantErr: "oauth.grantType must be authorization_code or client_credentials"},
		{name: "client credentials without secret", entry: `{"url":"https://h/","oauth":{"grantType":"client_credentials","clientId":"i"}}`, wantErr: "client_credentials requires oauth.clientId and oauth.clientSecret", creds: true},
		{name: "client credentials without id", entry: `{"url":"https://h/","oauth":{"grantType":"client_credentials","clientSecret":"s"}}`, wantErr: "client_credentials requires oauth.clientId and oauth.clientSecret", creds: true},
		{name: "authorization code without file", entry: `{"url":"https://h/","oauth":{"clientId":"i"}}`, wantErr: "authorization_code requires oauth.credentialFile"},
		{name: "empty client secret", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","clientSecret":""}}`, wantErr: "oauth.clientSecret must be non-empty", creds: true},
		{name: "empty client id", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","clientId":""}}`, wantErr: "oauth.clientId must be non-empty"},
		{name: "port too large", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","redirectPort":70000}}`, wantErr: "oauth.redirectPort must be an integer 0..65535"},
		{name: "port negative", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","redirectPort":-1}}`, wantErr: "oauth.redirectPort"},
		{name: "port string", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","redirectPort":"80"}}`, wantErr: "oauth.redirectPort"},
		{name: "port fraction", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","redirectPort":80.5}}`, wantErr: "oauth.redirectPort"},
		{name: "scopes not strings", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","scopes":[1]}}`, wantErr: `field "scopes" must be an array of strings`},
		{name: "scope empty", entry: `{"url":"https://h/","oauth":{"credentialFile":"c","scopes":[""]}}`, wantErr: "oauth.scopes must be non-empty scope tokens"},
		{name: "allowedTools empty name", entry: `{"command":"x","allowedTools":[""]}`, wantErr: "allowedTools entries must be 1..400 bytes"},
		{name: "allowedTools control char", entry: `{"command":"x","allowedTools":["a\u0007"]}`, wantErr: "allowedTools entries must be 1..400 bytes without control characters"},
		{name: "allowedTools too long", entry: `{"command":"x","allowedTools":["` + strings.Repeat("t", 401) + `"]}`, wantErr: "allowedTools entries must be 1..400 bytes"},
		{name: "allowedTools not array", entry: `{"command":"x","allowedTools":"*"}`, wantErr: `field "allowedTools" must be an array of strings`},
		{name: "disabled not bool", entry: `{"command":"x","disabled":"yes"}`, wantErr: `field "disabled" must be a boolean`},
		{name: "brokerAllowed not bool", entry: `{"command":"x","brokerAllowed":1}`, wantErr: `field "brokerAllowed" must be a boolean`},
		{name: "missing variable", entry: `{"command":"x","env":{"K":"${NOPE}"}}`, wantErr: `Server s field "env": Required environment variable is missing; config values are omitted (variable NOPE)`, creds: true},
		{name: "empty variable", entry: `{"url":"https://h/","headers":{"X-K":"${EMPTY}"}}`, env: map[string]string{"EMPTY": ""}, wantErr: "Required environment variable is empty; configure credentials explicitly (variable EMPTY)", creds: true},
		{name: "unclosed placeholder", entry: `{"command":"x${ABC"}`, wantErr: "Unclosed environment placeholder in MCP config"},
		{name: "invalid placeholder", entry: `{"command":"${A-B}"}`, wantErr: "Invalid environment placeholder in MCP config"},
		{name: "empty placeholder", entry: `{"command":"${}"}`, wantErr: "Invalid environment placeholder in MCP config"},
		{name: "default syntax unsupported", entry: `{"command":"${A:-x}"}`, wantErr: "Invalid environment placeholder in MCP config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for k, v := range tc.env {
				f.env[k] = v
			}
			f.writeProject(t, `{"s": `+tc.entry+`}`)
			reg, err := Load(f.opts(ScopeProject))
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Load succeeded, want error containing %q", tc.wantErr)
				}
				ce := asConfigError(t, err)
				if !strings.Contains(ce.Msg, tc.wantErr) {
					t.Fatalf("error %q lacks %q", ce.Msg, tc.wantErr)
				}
				if ce.Credentials != tc.creds {
					t.Errorf("Credentials = %v, want %v", ce.Credentials, tc.creds)
				}
				if reg != nil {
					t.Errorf("registry returned with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			e, ok := reg.Lookup("s")
			if !ok {
				t.Fatalf("server s not configured: %+v", reg)
			}
			if e.Fingerprint == "" {
				t.Errorf("no fingerprint")
			}
			if tc.check != nil {
				tc.check(t, f, e)
			}
		})
	}
}

func TestServerNames(t *testing.T) {
	cases := []struct {
		name string // JSON string literal content
		ok   bool
	}{
		{"a", true},
		{strings.Repeat("n", 200), true},
		{"ünïcode name", true},
		{strings.Repeat("n", 201), false},
		{"", false},
		{`a\u0001b`, false},
		{`tab\there`, false},
		{`del\u007f`, false},
		{`c1\u0085`, false},
	}
	for _, tc := range cases {
		f := newFixture(t)
		f.writeProject(t, `{"`+tc.name+`": {"command":"x"}}`)
		_, err := Load(f.opts(ScopeProject))
		if tc.ok && err != nil {
			t.Errorf("name %q: %v", tc.name, err)
		}
		if !tc.ok {
			if err == nil {
				t.Errorf("name %q accepted", tc.name)
				continue
			}
			if msg := asConfigError(t, err).Msg; msg != msgRegBadServerName {
				t.Errorf("name %q: error %q", tc.name, msg)
			}
		}
	}
}
