package broker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Limits of the registry (reference sections 8.3, 8.4, 8.9, 13.1).
const (
	// MaxRegistryBytes bounds one registry file.
	MaxRegistryBytes = 1 << 20
	// MaxServerNameBytes bounds a server name.
	MaxServerNameBytes = 200
	// MaxToolNameBytes bounds a tool name (allowedTools entries, explain).
	MaxToolNameBytes = 400
)

// Scope is the set of registries the broker reads (--mcp-scope). The zero Scope is
// "none": the broker is disabled.
type Scope uint8

// The scopes. ScopeAll is project, user and local together.
const (
	ScopeProject Scope = 1 << iota
	ScopeUser
	ScopeLocal

	ScopeNone Scope = 0
	ScopeAll        = ScopeProject | ScopeUser | ScopeLocal
)

// DefaultScope is the scope used when --mcp-scope is not given.
const DefaultScope = ScopeProject

// ParseScope parses an --mcp-scope value: project, user, local, a comma list of those,
// all, or none. Everything else (plugin, all or none mixed with others, empty items)
// is an error whose message tells the user what is accepted.
func ParseScope(s string) (Scope, error) {
	switch strings.TrimSpace(s) {
	case "all":
		return ScopeAll, nil
	case "none":
		return ScopeNone, nil
	}
	var sc Scope
	for _, item := range strings.Split(s, ",") {
		switch strings.TrimSpace(item) {
		case "project":
			sc |= ScopeProject
		case "user":
			sc |= ScopeUser
		case "local":
			sc |= ScopeLocal
		default:
			return ScopeNone, regScopeError(s)
		}
	}
	return sc, nil
}

func regScopeError(s string) error {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Errorf("invalid --mcp-scope %q: use project, user, local, a comma list of those, all, or none; "+
		"plugin registries are not read: export plugin servers to an explicit --config file", s)
}

// String returns the canonical spelling of s: "none", "all", or a comma list in the
// order project, user, local. ParseScope(s.String()) == s.
func (s Scope) String() string {
	switch s & ScopeAll {
	case ScopeNone:
		return "none"
	case ScopeAll:
		return "all"
	}
	var parts []string
	for _, p := range []struct {
		bit  Scope
		name string
	}{{ScopeProject, "project"}, {ScopeUser, "user"}, {ScopeLocal, "local"}} {
		if s&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, ",")
}

// Has reports whether s includes every scope in t.
func (s Scope) Has(t Scope) bool { return t != ScopeNone && s&t == t }

// RegistryOptions says where a registry comes from. main turns flags and environment
// into it; LoadRegistry reads no environment of its own.
type RegistryOptions struct {
	// Project is the canonical project directory: the base of a relative ConfigPath,
	// the home of .mcp.json, and the key of the local scope in ~/.claude.json.
	Project string
	// ConfigPath is --config; relative paths resolve against Project. When set, that
	// file alone is the registry and it must exist.
	ConfigPath string
	// Scope is --mcp-scope (use DefaultScope when the flag is absent).
	Scope Scope
	// Home is $HOME; required for the user and local scopes.
	Home string
	// LookupEnv expands ${VAR} placeholders and finds PATH for self-exclusion. Nil
	// means no variable is set.
	LookupEnv func(string) (string, bool)
	// NoBridge is REPL_MCP_NO_BRIDGE=1: the registry is empty and the broker disabled.
	NoBridge bool
	// SelfExecutables are paths of repl-mcp itself; stdio entries launching one of
	// them are dropped.
	SelfExecutables []string
}

// Registry kinds reported as provenance.registry by explain.
const (
	RegistryExplicitConfig  = "explicit_config"
	RegistryProjectAndOptIn = "project_and_opt_in_scopes"
)

// Provenance is where a registry came from, as explain reports it.
type Provenance struct {
	Project  string `json:"project"`
	Registry string `json:"registry"`
	Scope    string `json:"scope"`
}

// Provenance describes the registry these options select. It needs no file system,
// so explain can report it next to a configuration error too.
func (o RegistryOptions) Provenance() Provenance {
	p := Provenance{Project: o.Project, Registry: RegistryProjectAndOptIn, Scope: o.Scope.String()}
	if o.ConfigPath != "" {
		p.Registry = RegistryExplicitConfig
	}
	return p
}

// SourceKind names where a registry file sits.
type SourceKind string

// The source kinds.
const (
	SourceConfig  SourceKind = "config"  // --config
	SourceProject SourceKind = "project" // <project>/.mcp.json
	SourceUser    SourceKind = "user"    // ~/.claude.json mcpServers
	SourceLocal   SourceKind = "local"   // ~/.claude.json projects[<project>].mcpServers
)

// Source is one registry file that was looked at.
type Source struct {
	Kind    SourceKind
	Path    string
	Present bool // the file existed and was read
}

// Exclusion reasons for names that appear in a registry but are not configured.
const (
	ExcludedNotGranted = "not_granted" // a user/local entry without brokerAllowed: true
	ExcludedDisabled   = "disabled"    // an entry with disabled: true
)

// Transport is how the broker reaches a server.
type Transport string

// The transports. "streamable-http" in a registry is TransportHTTP.
const (
	TransportStdio Transport = "stdio"
	TransportHTTP  Transport = "http"
)

// OAuth grant types.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// OAuthConfig is a validated `oauth` object (reference 8.4, 8.7). Only the fields are
// checked here; the flows belong to the connection code.
type OAuthConfig struct {
	GrantType      string   // GrantAuthorizationCode (default) or GrantClientCredentials
	ClientID       string   // expanded; "" when not given
	ClientSecret   string   // expanded; "" when not given
	CredentialFile string   // expanded and absolute; "" when not given
	RedirectPort   uint16   // 0 = ephemeral
	Scopes         []string // as given
}

// ServerEntry is one validated, expanded server. Env, Headers and the OAuth client
// secret hold secrets: never log or echo them.
type ServerEntry struct {
	Name      string
	Kind      SourceKind // which registry configured it
	Source    string     // that registry file
	Transport Transport

	// stdio
	Command string
	Args    []string
	Env     map[string]string // added to the peer environment with REPL_MCP_NO_BRIDGE=1
	Cwd     string            // absolute; defaults to the registry file's directory

	// http
	URL     string
	Headers map[string]string // canonical header names
	OAuth   *OAuthConfig

	// AllowedTools is the allowlist when Restricted; without allowedTools every tool
	// is allowed. An empty allowedTools list allows none.
	AllowedTools []string
	Restricted   bool

	// Fingerprint is the transport identity: a hash of everything that decides the
	// launch or connection (command, args, env, cwd; or url, headers, oauth), and
	// nothing else. Aliases with the same Fingerprint share one transport.
	Fingerprint string
}

// ToolAllowed reports whether the entry's allowlist admits tool.
func (e ServerEntry) ToolAllowed(tool string) bool {
	if !e.Restricted {
		return true
	}
	for _, t := range e.AllowedTools {
		if t == tool {
			return true
		}
	}
	return false
}

// Registry is a validated registry: the servers the broker may reach.
type Registry struct {
	// Servers are the configured entries by name.
	Servers map[string]ServerEntry
	// Excluded are names present in a registry but not configured, with the reason
	// (ExcludedNotGranted or ExcludedDisabled).
	Excluded map[string]string
	// SelfExcluded counts entries dropped because they would launch repl-mcp itself.
	SelfExcluded int
	// Present is true when some registry file existed (registry_absent vs
	// server_absent in explain).
	Present bool
	// Disabled is true for scope none or REPL_MCP_NO_BRIDGE=1 (broker_disabled).
	Disabled bool
	// Provenance is what explain reports as provenance.
	Provenance Provenance
	// Sources are the registry files looked at, in merge order.
	Sources []Source
}

// Names returns the configured server names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.Servers))
	for n := range r.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the entry configured under name.
func (r *Registry) Lookup(name string) (ServerEntry, bool) {
	e, ok := r.Servers[name]
	return e, ok
}

// ConfigError is a defect in the registry. Callers store it as the broker's
// configuration_error and keep serving. Its message never holds a configured value,
// an expanded variable, a header, a URL or a secret, so it is safe to show.
type ConfigError struct {
	Msg string
	// Credentials is true when the defect is about credentials (a missing or empty
	// environment variable, an empty authorization header, an OAuth client secret):
	// explain reports credentials_missing rather than config_invalid.
	Credentials bool
}

func (e *ConfigError) Error() string { return e.Msg }

func regConfigErr(format string, a ...any) *ConfigError {
	return &ConfigError{Msg: fmt.Sprintf(format, a...)}
}

// Messages whose key tokens the contract fixes (reference 8.3, 8.4).
const (
	msgRegNotRegular       = "MCP registry must be a regular file; FIFOs and devices are unsupported"
	msgRegTooLarge         = "MCP registry exceeds the 1 MiB limit"
	msgRegInvalidJSON      = "MCP registry is invalid JSON; values are omitted from diagnostics"
	msgRegCannotRead       = "Cannot read MCP registry file; check --config and file permissions"
	msgRegNeedsMCPServers  = "Project MCP registry requires mcpServers; check the registry format"
	msgRegHomeMissing      = "HOME is not set; the user and local --mcp-scope read ~/.claude.json"
	msgRegUnclosed         = "Unclosed environment placeholder in MCP config"
	msgRegBadPlaceholder   = "Invalid environment placeholder in MCP config"
	msgRegVarMissing       = "Required environment variable is missing; config values are omitted"
	msgRegVarEmpty         = "Required environment variable is empty; configure credentials explicitly"
	msgRegBadURL           = "URL requires HTTP(S), host, and no embedded credentials"
	msgRegEmptyAuth        = "empty authorization header; configure credentials explicitly"
	msgRegBadServerName    = "MCP server names must be 1..200 bytes without control characters"
	msgRegInvalidEntryTail = "check documented fields and types"
)

// LoadRegistry reads and validates the registry the options select. It starts no
// process and touches no network; it reads at most three files. Every error it
// returns is a *ConfigError.
func LoadRegistry(opts RegistryOptions) (*Registry, error) {
	reg := &Registry{
		Servers:    map[string]ServerEntry{},
		Excluded:   map[string]string{},
		Provenance: opts.Provenance(),
	}
	if opts.NoBridge || opts.Scope&ScopeAll == ScopeNone {
		reg.Disabled = true
		return reg, nil
	}
	l := loader{opts: opts, reg: reg}
	if opts.ConfigPath != "" {
		path := opts.ConfigPath
		if !filepath.IsAbs(path) {
			if opts.Project == "" {
				return nil, regConfigErr("%s (relative --config needs a project directory)", msgRegCannotRead)
			}
			path = filepath.Join(opts.Project, path)
		}
		if err := l.loadProjectFile(SourceConfig, path, true); err != nil {
			return nil, err
		}
		return reg, nil
	}
	if opts.Scope&(ScopeUser|ScopeLocal) != 0 {
		if opts.Home == "" {
			return nil, &ConfigError{Msg: msgRegHomeMissing}
		}
		if err := l.loadClaudeJSON(filepath.Join(opts.Home, ".claude.json")); err != nil {
			return nil, err
		}
	}
	if opts.Scope&ScopeProject != 0 {
		if opts.Project == "" {
			return nil, regConfigErr("The project scope needs a project directory")
		}
		if err := l.loadProjectFile(SourceProject, filepath.Join(opts.Project, ".mcp.json"), false); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

type loader struct {
	opts RegistryOptions
	reg  *Registry
}

// loadProjectFile reads a --config or .mcp.json registry: every entry is regGranted.
func (l *loader) loadProjectFile(kind SourceKind, path string, mustExist bool) error {
	data, err := readRegistryFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if mustExist {
			return regConfigErr("%s (file %s does not exist)", msgRegCannotRead, path)
		}
		l.reg.Sources = append(l.reg.Sources, Source{Kind: kind, Path: path})
		return nil
	}
	if err != nil {
		return err
	}
	l.reg.Sources = append(l.reg.Sources, Source{Kind: kind, Path: path, Present: true})
	l.reg.Present = true
	top, err := regDecodeObject(data, path)
	if err != nil {
		return err
	}
	rawServers, ok := top["mcpServers"]
	if !ok {
		return regConfigErr("%s (file %s)", msgRegNeedsMCPServers, path)
	}
	servers, ok := regObject(rawServers)
	if !ok {
		return regConfigErr("%s: mcpServers must be an object (file %s)", msgRegNeedsMCPServers, path)
	}
	return l.addServers(kind, path, servers, false)
}

// loadClaudeJSON reads ~/.claude.json for the user and local scopes. A missing file,
// or a missing mcpServers in it, is an empty scope.
func (l *loader) loadClaudeJSON(path string) error {
	data, err := readRegistryFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if l.opts.Scope&ScopeUser != 0 {
			l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceUser, Path: path})
		}
		if l.opts.Scope&ScopeLocal != 0 {
			l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceLocal, Path: path})
		}
		return nil
	}
	if err != nil {
		return err
	}
	l.reg.Present = true
	top, err := regDecodeObject(data, path)
	if err != nil {
		return err
	}
	if l.opts.Scope&ScopeUser != 0 {
		l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceUser, Path: path, Present: true})
		if raw, ok := top["mcpServers"]; ok {
			servers, ok := regObject(raw)
			if !ok {
				return regConfigErr("MCP registry %s: mcpServers must be an object", path)
			}
			if err := l.addServers(SourceUser, path, servers, true); err != nil {
				return err
			}
		}
	}
	if l.opts.Scope&ScopeLocal != 0 {
		l.reg.Sources = append(l.reg.Sources, Source{Kind: SourceLocal, Path: path, Present: true})
		servers, err := regLocalServers(top, l.opts.Project, path)
		if err != nil {
			return err
		}
		if err := l.addServers(SourceLocal, path, servers, true); err != nil {
			return err
		}
	}
	return nil
}

func regLocalServers(top map[string]json.RawMessage, project, path string) (map[string]json.RawMessage, error) {
	raw, ok := top["projects"]
	if !ok || project == "" {
		return nil, nil
	}
	projects, ok := regObject(raw)
	if !ok {
		return nil, regConfigErr("MCP registry %s: projects must be an object", path)
	}
	raw, ok = projects[project]
	if !ok {
		return nil, nil
	}
	proj, ok := regObject(raw)
	if !ok {
		return nil, regConfigErr("MCP registry %s: the project entry must be an object", path)
	}
	raw, ok = proj["mcpServers"]
	if !ok {
		return nil, nil
	}
	servers, ok := regObject(raw)
	if !ok {
		return nil, regConfigErr("MCP registry %s: the project's mcpServers must be an object", path)
	}
	return servers, nil
}

// addServers validates and merges one registry's entries. A later call wins on a
// name clash (foreign scopes are loaded first, the project last). Foreign entries
// without brokerAllowed: true are not parsed at all.
func (l *loader) addServers(kind SourceKind, path string, servers map[string]json.RawMessage, foreign bool) error {
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		raw := servers[name]
		if !validRegName(name, MaxServerNameBytes) {
			if foreign && !regGranted(raw) {
				continue // inert: a name we cannot even report
			}
			return &ConfigError{Msg: msgRegBadServerName}
		}
		if foreign && !regGranted(raw) {
			if _, ok := l.reg.Servers[name]; !ok {
				l.reg.Excluded[name] = ExcludedNotGranted
			}
			continue
		}
		e, disabled, err := l.validateEntry(name, kind, path, raw)
		if err != nil {
			return err
		}
		if disabled {
			delete(l.reg.Servers, name)
			l.reg.Excluded[name] = ExcludedDisabled
			continue
		}
		if l.launchesSelf(e) {
			l.reg.SelfExcluded++
			continue
		}
		delete(l.reg.Excluded, name)
		l.reg.Servers[name] = e
	}
	return nil
}

// regGranted reports whether a foreign entry carries brokerAllowed: true.
func regGranted(raw json.RawMessage) bool {
	obj, ok := regObject(raw)
	if !ok {
		return false
	}
	return bytes.Equal(bytes.TrimSpace(obj["brokerAllowed"]), []byte("true"))
}

// readRegistryFile opens path without blocking, insists on a regular file of at most
// MaxRegistryBytes and reads it. A missing file is reported wrapping fs.ErrNotExist.
func readRegistryFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, regConfigErr("%s (file %s)", msgRegCannotRead, path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, regConfigErr("%s (file %s)", msgRegCannotRead, path)
	}
	if !fi.Mode().IsRegular() {
		return nil, regConfigErr("%s (file %s)", msgRegNotRegular, path)
	}
	if fi.Size() > MaxRegistryBytes {
		return nil, regConfigErr("%s (file %s)", msgRegTooLarge, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxRegistryBytes+1))
	if err != nil {
		return nil, regConfigErr("%s (file %s)", msgRegCannotRead, path)
	}
	if len(data) > MaxRegistryBytes {
		return nil, regConfigErr("%s (file %s)", msgRegTooLarge, path)
	}
	return data, nil
}

// regDecodeObject parses a registry file as a JSON object. Its errors carry a byte
// offset at most, never the text around it.
func regDecodeObject(data []byte, path string) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, regConfigErr("%s (file %s, byte %d)", msgRegInvalidJSON, path, syn.Offset)
		}
		return nil, regConfigErr("%s (file %s: the top level must be an object)", msgRegInvalidJSON, path)
	}
	if top == nil {
		return nil, regConfigErr("%s (file %s: the top level must be an object)", msgRegInvalidJSON, path)
	}
	return top, nil
}

// regObject decodes raw as a JSON object; null and other kinds are not objects.
func regObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if !regIsKind(raw, '{') {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

func regIsKind(raw json.RawMessage, first byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == first
}

// validRegName reports whether s is 1..max bytes of UTF-8 without control characters.
func validRegName(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

var regEntryFields = map[string]bool{
	"type": true, "command": true, "args": true, "env": true, "cwd": true,
	"url": true, "headers": true, "disabled": true, "brokerAllowed": true,
	"allowedTools": true, "oauth": true,
}

var regOAuthFields = map[string]bool{
	"grantType": true, "clientId": true, "clientSecret": true,
	"credentialFile": true, "redirectPort": true, "scopes": true,
}

// Headers the HTTP transport manages itself (reference 8.5).
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

// validateEntry checks one entry against the schema of reference 8.4 and expands its
// placeholders. disabled reports an entry with disabled: true, which is not further
// validated.
func (l *loader) validateEntry(name string, kind SourceKind, path string, raw json.RawMessage) (ServerEntry, bool, error) {
	v := &entryValidator{name: name, dir: filepath.Dir(path), lookup: l.opts.LookupEnv}
	if v.lookup == nil {
		v.lookup = func(string) (string, bool) { return "", false }
	}
	obj, ok := regObject(raw)
	if !ok {
		return ServerEntry{}, false, v.invalid("the entry must be an object")
	}
	if err := v.unknownFields(obj, regEntryFields, ""); err != nil {
		return ServerEntry{}, false, err
	}
	disabled, err := v.boolField(obj, "disabled")
	if err != nil {
		return ServerEntry{}, false, err
	}
	if _, err := v.boolField(obj, "brokerAllowed"); err != nil {
		return ServerEntry{}, false, err
	}
	delete(obj, "brokerAllowed")
	if disabled {
		return ServerEntry{}, true, nil
	}

	e := ServerEntry{Name: name, Kind: kind, Source: path}
	typ, hasType, err := v.stringField(obj, "type")
	if err != nil {
		return ServerEntry{}, false, err
	}
	_, hasCommand := obj["command"]
	switch {
	case !hasType && hasCommand, hasType && typ == "stdio":
		e.Transport = TransportStdio
	case !hasType, typ == "http", typ == "streamable-http":
		e.Transport = TransportHTTP
	default:
		return ServerEntry{}, false, regConfigErr("Server %s: unsupported transport; use stdio or streamable-http", name)
	}
	if e.Transport == TransportStdio {
		err = v.stdio(obj, &e)
	} else {
		err = v.http(obj, &e)
	}
	if err != nil {
		return ServerEntry{}, false, err
	}
	if err := v.allowedTools(obj, &e); err != nil {
		return ServerEntry{}, false, err
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

func (v *entryValidator) stdio(obj map[string]json.RawMessage, e *ServerEntry) error {
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

func (v *entryValidator) http(obj map[string]json.RawMessage, e *ServerEntry) error {
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
		if !validRegName(s, MaxToolNameBytes) || strings.ContainsRune(s, ' ') {
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

func (v *entryValidator) allowedTools(obj map[string]json.RawMessage, e *ServerEntry) error {
	tools, ok, err := v.stringsField(obj, "allowedTools")
	if err != nil || !ok {
		return err
	}
	seen := map[string]bool{}
	e.AllowedTools = []string{}
	e.Restricted = true
	for _, t := range tools {
		if !validRegName(t, MaxToolNameBytes) {
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

// regFingerprint hashes the transport identity of e (reference 8.5): allowlists and
// names are left out, so aliases of one launch share a transport.
func regFingerprint(e ServerEntry) string {
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

// launchesSelf reports whether a stdio entry would start repl-mcp itself (reference
// 8.2): by its command's base name, a python -m repl_mcp module, uv/uvx running
// repl-mcp, or a command that is one of the SelfExecutables files.
func (l *loader) launchesSelf(e ServerEntry) bool {
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
func (l *loader) resolveCommand(e ServerEntry) string {
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
