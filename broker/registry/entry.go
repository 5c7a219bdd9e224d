package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

var regEntryFields = map[string]bool{
	"type": true, "command": true, "args": true, "env": true, "cwd": true,
	"url": true, "headers": true, "disabled": true, "brokerAllowed": true,
	"allowedTools": true, "oauth": true,
}

var regOAuthFields = map[string]bool{
	"grantType": true, "clientId": true, "clientSecret": true,
	"credentialFile": true, "redirectPort": true, "scopes": true,
}

// Headers the HTTP transport manages itself (docs/contract.md §8.5).
var regReservedHeaders = map[string]bool{
	"Accept": true, "Mcp-Session-Id": true, "Last-Event-Id": true,
}

// entryValidator validates one entry; its errors name the server and the field.
type entryValidator struct {
	name   string
	dir    string // the registry file's directory
	lookup func(string) (string, bool)
}

func (v *entryValidator) invalid(format string, a ...any) *ConfigError {
	return regConfigErr("Invalid configuration for server %s; %s: %s", v.name, msgRegInvalidEntryTail, fmt.Sprintf(format, a...))
}

// validateEntry checks one entry against the schema of docs/contract.md §8.4 and expands its
// placeholders. disabled reports an entry with disabled: true, which is not further
// validated.
func (l *loader) validateEntry(name string, kind SourceKind, path string, raw json.RawMessage) (Entry, bool, error) {
	v := &entryValidator{name: name, dir: filepath.Dir(path), lookup: l.opts.LookupEnv}
	if v.lookup == nil {
		v.lookup = func(string) (string, bool) { return "", false }
	}
	obj, ok := regObject(raw)
	if !ok {
		return Entry{}, false, v.invalid("the entry must be an object")
	}
	if err := v.unknownFields(obj, regEntryFields, ""); err != nil {
		return Entry{}, false, err
	}
	disabled, err := v.boolField(obj, "disabled")
	if err != nil {
		return Entry{}, false, err
	}
	if _, err := v.boolField(obj, "brokerAllowed"); err != nil {
		return Entry{}, false, err
	}
	delete(obj, "brokerAllowed")
	if disabled {
		return Entry{}, true, nil
	}

	e := Entry{Name: name, Kind: kind, Source: path}
	typ, hasType, err := v.stringField(obj, "type")
	if err != nil {
		return Entry{}, false, err
	}
	_, hasCommand := obj["command"]
	switch {
	case !hasType && hasCommand, hasType && typ == "stdio":
		e.Transport = TransportStdio
	case !hasType, typ == "http", typ == "streamable-http":
		e.Transport = TransportHTTP
	default:
		return Entry{}, false, regConfigErr("Server %s: unsupported transport; use stdio or streamable-http", name)
	}
	if e.Transport == TransportStdio {
		err = v.stdio(obj, &e)
	} else {
		err = v.http(obj, &e)
	}
	if err != nil {
		return Entry{}, false, err
	}
	if err := v.allowedTools(obj, &e); err != nil {
		return Entry{}, false, err
	}
	e.Fingerprint = regFingerprint(e)
	return e, false, nil
}

func (v *entryValidator) unknownFields(obj map[string]json.RawMessage, known map[string]bool, prefix string) error {
	var unknown []string
	for k := range obj {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	f := unknown[0]
	if len(f) > 64 {
		f = f[:64] + "..."
	}
	return v.invalid("unknown field %q", prefix+f)
}

// mismatch rejects fields that belong to the other transport.
func (v *entryValidator) mismatch(obj map[string]json.RawMessage, t Transport, fields ...string) error {
	for _, f := range fields {
		if _, ok := obj[f]; ok {
			return v.invalid("field %q is not valid for the %s transport", f, t)
		}
	}
	return nil
}

func (v *entryValidator) stdio(obj map[string]json.RawMessage, e *Entry) error {
	if err := v.mismatch(obj, TransportStdio, "url", "headers", "oauth"); err != nil {
		return err
	}
	cmd, ok, err := v.stringField(obj, "command")
	if err != nil {
		return err
	}
	if !ok || cmd == "" {
		return v.invalid("stdio servers require a non-empty command")
	}
	if e.Command, err = v.expandNoNUL("command", cmd); err != nil {
		return err
	}
	e.WrittenCommand = cmd
	if e.Command == "" {
		return v.invalid("stdio servers require a non-empty command")
	}
	args, _, err := v.stringsField(obj, "args")
	if err != nil {
		return err
	}
	for i, a := range args {
		if args[i], err = v.expandNoNUL("args", a); err != nil {
			return err
		}
	}
	e.Args = args
	env, _, err := v.stringMapField(obj, "env")
	if err != nil {
		return err
	}
	for k, val := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return v.invalid("env names must be non-empty without '=' or NUL")
		}
		if env[k], err = v.expandNoNUL("env", val); err != nil {
			return err
		}
	}
	e.Env = env
	cwd, hasCwd, err := v.stringField(obj, "cwd")
	if err != nil {
		return err
	}
	e.Cwd = v.dir
	if hasCwd {
		if cwd, err = v.expandNoNUL("cwd", cwd); err != nil {
			return err
		}
		if cwd == "" {
			return v.invalid("cwd must be a non-empty path")
		}
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(v.dir, cwd)
		}
		e.Cwd = filepath.Clean(cwd)
	}
	if fi, err := os.Stat(e.Cwd); err != nil || !fi.IsDir() {
		return v.invalid("cwd must be an existing directory")
	}
	return nil
}

func (v *entryValidator) http(obj map[string]json.RawMessage, e *Entry) error {
	if err := v.mismatch(obj, TransportHTTP, "command", "args", "env", "cwd"); err != nil {
		return err
	}
	raw, ok, err := v.stringField(obj, "url")
	if err != nil {
		return err
	}
	if !ok || raw == "" {
		return v.invalid("http servers require a url")
	}
	if e.URL, err = v.expand("url", raw); err != nil {
		return err
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.User != nil {
		return regConfigErr("Server %s: %s", v.name, msgRegBadURL)
	}
	headers, _, err := v.stringMapField(obj, "headers")
	if err != nil {
		return err
	}
	if headers != nil {
		e.Headers = make(map[string]string, len(headers))
	}
	for k, val := range headers {
		if !validRegHeaderName(k) {
			return v.invalid("headers must have valid HTTP header names")
		}
		canon := textproto.CanonicalMIMEHeaderKey(k)
		if regReservedHeaders[canon] {
			return v.invalid("header %q is managed by the broker and may not be configured", canon)
		}
		if _, dup := e.Headers[canon]; dup {
			return v.invalid("header %q is given more than once", canon)
		}
		val, err := v.expand("headers", val)
		if err != nil {
			return err
		}
		if !validRegHeaderValue(val) {
			return v.invalid("header %q has an invalid HTTP value; values are omitted", canon)
		}
		if canon == "Authorization" {
			if t := strings.TrimSpace(val); t == "" || strings.EqualFold(t, "Bearer") {
				return &ConfigError{Msg: fmt.Sprintf("Server %s: %s", v.name, msgRegEmptyAuth), Credentials: true}
			}
		}
		e.Headers[canon] = val
	}
	if rawOAuth, ok := obj["oauth"]; ok {
		if _, auth := e.Headers["Authorization"]; auth {
			return v.invalid("oauth conflicts with an Authorization header; configure one of them")
		}
		if e.OAuth, err = v.oauth(rawOAuth); err != nil {
			return err
		}
	}
	return nil
}

func (v *entryValidator) oauth(raw json.RawMessage) (*OAuthConfig, error) {
	obj, ok := regObject(raw)
	if !ok {
		return nil, v.invalid("field \"oauth\" must be an object")
	}
	if err := v.unknownFields(obj, regOAuthFields, "oauth."); err != nil {
		return nil, err
	}
	o := &OAuthConfig{GrantType: GrantAuthorizationCode}
	grant, ok, err := v.stringField(obj, "grantType")
	if err != nil {
		return nil, err
	}
	if ok {
		if grant != GrantAuthorizationCode && grant != GrantClientCredentials {
			return nil, v.invalid("oauth.grantType must be authorization_code or client_credentials")
		}
		o.GrantType = grant
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"clientId", &o.ClientID}, {"clientSecret", &o.ClientSecret}, {"credentialFile", &o.CredentialFile}} {
		s, ok, err := v.stringField(obj, f.key)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if s, err = v.expandNoNUL("oauth."+f.key, s); err != nil {
			return nil, err
		}
		if s == "" {
			err := v.invalid("oauth.%s must be non-empty when given", f.key)
			err.Credentials = f.key == "clientSecret"
			return nil, err
		}
		*f.dst = s
	}
	if o.CredentialFile != "" && !filepath.IsAbs(o.CredentialFile) {
		o.CredentialFile = filepath.Join(v.dir, o.CredentialFile)
	}
	if rawPort, ok := obj["redirectPort"]; ok {
		if !regIsDigit(rawPort) || json.Unmarshal(rawPort, &o.RedirectPort) != nil {
			return nil, v.invalid("oauth.redirectPort must be an integer 0..65535")
		}
	}
	scopes, _, err := v.stringsField(obj, "scopes")
	if err != nil {
		return nil, err
	}
	for _, s := range scopes {
		if !ValidName(s, MaxToolNameBytes) || strings.ContainsRune(s, ' ') {
			return nil, v.invalid("oauth.scopes must be non-empty scope tokens")
		}
	}
	o.Scopes = scopes
	switch o.GrantType {
	case GrantClientCredentials:
		if o.ClientID == "" || o.ClientSecret == "" {
			return nil, &ConfigError{Msg: v.invalid("client_credentials requires oauth.clientId and oauth.clientSecret").Msg, Credentials: true}
		}
	case GrantAuthorizationCode:
		if o.CredentialFile == "" {
			return nil, v.invalid("authorization_code requires oauth.credentialFile")
		}
	}
	return o, nil
}

func regIsDigit(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] >= '0' && raw[0] <= '9'
}

func (v *entryValidator) allowedTools(obj map[string]json.RawMessage, e *Entry) error {
	tools, ok, err := v.stringsField(obj, "allowedTools")
	if err != nil || !ok {
		return err
	}
	seen := map[string]bool{}
	e.AllowedTools = []string{}
	e.Restricted = true
	for _, t := range tools {
		if !ValidName(t, MaxToolNameBytes) {
			return v.invalid("allowedTools entries must be 1..400 bytes without control characters")
		}
		if !seen[t] {
			seen[t] = true
			e.AllowedTools = append(e.AllowedTools, t)
		}
	}
	return nil
}

// Typed field readers: a present field of the wrong kind (null included) is an error.

func (v *entryValidator) boolField(obj map[string]json.RawMessage, key string) (bool, error) {
	raw, ok := obj[key]
	if !ok {
		return false, nil
	}
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, v.invalid("field %q must be a boolean", key)
}

func (v *entryValidator) stringField(obj map[string]json.RawMessage, key string) (string, bool, error) {
	raw, ok := obj[key]
	if !ok {
		return "", false, nil
	}
	var s string
	if !regIsKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
		return "", false, v.invalid("field %q must be a string", key)
	}
	return s, true, nil
}

func (v *entryValidator) stringsField(obj map[string]json.RawMessage, key string) ([]string, bool, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, false, nil
	}
	var items []json.RawMessage
	if !regIsKind(raw, '[') || json.Unmarshal(raw, &items) != nil {
		return nil, false, v.invalid("field %q must be an array of strings", key)
	}
	out := make([]string, len(items))
	for i, it := range items {
		if !regIsKind(it, '"') || json.Unmarshal(it, &out[i]) != nil {
			return nil, false, v.invalid("field %q must be an array of strings", key)
		}
	}
	return out, true, nil
}

func (v *entryValidator) stringMapField(obj map[string]json.RawMessage, key string) (map[string]string, bool, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, false, nil
	}
	m, isObj := regObject(raw)
	if !isObj {
		return nil, false, v.invalid("field %q must be an object of strings", key)
	}
	out := make(map[string]string, len(m))
	for k, r := range m {
		var s string
		if !regIsKind(r, '"') || json.Unmarshal(r, &s) != nil {
			return nil, false, v.invalid("field %q must be an object of strings", key)
		}
		out[k] = s
	}
	return out, true, nil
}

// expand substitutes ${VAR} placeholders in a value of field. Errors name the
// variable (names are [A-Za-z0-9_]+) and never the value.
func (v *entryValidator) expand(field, s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return "", regConfigErr("Server %s field %q: %s", v.name, field, msgRegUnclosed)
		}
		name := rest[:j]
		if !validRegVar(name) {
			return "", regConfigErr("Server %s field %q: %s", v.name, field, msgRegBadPlaceholder)
		}
		val, ok := v.lookup(name)
		if !ok {
			return "", &ConfigError{Msg: fmt.Sprintf("Server %s field %q: %s (variable %s)", v.name, field, msgRegVarMissing, name), Credentials: true}
		}
		if val == "" {
			return "", &ConfigError{Msg: fmt.Sprintf("Server %s field %q: %s (variable %s)", v.name, field, msgRegVarEmpty, name), Credentials: true}
		}
		b.WriteString(val)
		s = rest[j+1:]
	}
}

// expandNoNUL expands and rejects NUL bytes, which no process argument can carry.
func (v *entryValidator) expandNoNUL(field, s string) (string, error) {
	out, err := v.expand(field, s)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(out, 0) >= 0 {
		return "", v.invalid("field %q must not contain NUL bytes; values are omitted", field)
	}
	return out, nil
}

func validRegVar(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// validRegHeaderName reports whether s is an RFC 9110 token.
func validRegHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// validRegHeaderValue reports whether s is a valid field value: no control characters
// other than horizontal tab.
func validRegHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// regFingerprint hashes the transport identity of e (docs/contract.md §8.5): allowlists and
// names are left out, so aliases of one launch share a transport.
func regFingerprint(e Entry) string {
	id := struct {
		Transport Transport         `json:"t"`
		Command   string            `json:"c,omitempty"`
		Args      []string          `json:"a,omitempty"`
		Env       map[string]string `json:"e,omitempty"`
		Cwd       string            `json:"d,omitempty"`
		URL       string            `json:"u,omitempty"`
		Headers   map[string]string `json:"h,omitempty"`
		OAuth     *OAuthConfig      `json:"o,omitempty"`
	}{e.Transport, e.Command, e.Args, e.Env, e.Cwd, e.URL, e.Headers, e.OAuth}
	b, err := json.Marshal(id)
	if err != nil {
		panic(err) // only strings, maps of strings and integers: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// launchesSelf reports whether a stdio entry would start repl-mcp itself
// (docs/contract.md §8.2): by its command's base name, a python -m repl_mcp module,
// uv/uvx running repl-mcp, or a command that is one of the SelfExecutables files.
func (l *loader) launchesSelf(e Entry) bool {
	if e.Transport != TransportStdio {
		return false
	}
	base := filepath.Base(e.Command)
	if base == "repl-mcp" || base == "repl-mcp.exe" {
		return true
	}
	for i, a := range e.Args {
		if a == "-m" && i+1 < len(e.Args) && (e.Args[i+1] == "repl_mcp" || e.Args[i+1] == "repl_mcp.repl_mcp_server") {
			return true
		}
	}
	if base == "uv" || base == "uvx" {
		for _, a := range e.Args {
			if a == "repl-mcp" {
				return true
			}
		}
	}
	if len(l.opts.SelfExecutables) == 0 {
		return false
	}
	fi, err := os.Stat(l.resolveCommand(e))
	if err != nil {
		return false
	}
	for _, self := range l.opts.SelfExecutables {
		if sfi, err := os.Stat(self); err == nil && os.SameFile(fi, sfi) {
			return true
		}
	}
	return false
}

// resolveCommand finds the file a command names: a path relative to the entry's cwd,
// or a bare name searched in PATH as LookupEnv reports it.
func (l *loader) resolveCommand(e Entry) string {
	if strings.ContainsRune(e.Command, '/') {
		if filepath.IsAbs(e.Command) {
			return e.Command
		}
		return filepath.Join(e.Cwd, e.Command)
	}
	if l.opts.LookupEnv == nil {
		return ""
	}
	path, _ := l.opts.LookupEnv("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(e.Cwd, dir)
		}
		p := filepath.Join(dir, e.Command)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
