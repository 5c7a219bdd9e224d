package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseScope(t *testing.T) {
	valid := []struct {
		in   string
		want Scope
		str  string
	}{
		{"project", ScopeProject, "project"},
		{"user", ScopeUser, "user"},
		{"local", ScopeLocal, "local"},
		{"project,user", ScopeProject | ScopeUser, "project,user"},
		{"local, project", ScopeProject | ScopeLocal, "project,local"},
		{"user,local,project", ScopeAll, "all"},
		{"project,project", ScopeProject, "project"},
		{"all", ScopeAll, "all"},
		{"none", ScopeNone, "none"},
	}
	for _, tc := range valid {
		got, err := ParseScope(tc.in)
		if err != nil {
			t.Errorf("ParseScope(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || got.String() != tc.str {
			t.Errorf("ParseScope(%q) = %v (%q), want %v (%q)", tc.in, got, got.String(), tc.want, tc.str)
		}
		if back, err := ParseScope(got.String()); err != nil || back != got {
			t.Errorf("ParseScope(%q.String()) = %v, %v", tc.in, back, err)
		}
	}
	for _, in := range []string{"", "plugin", "project,plugin", "all,project", "none,user", "project,", ",user", "Project", "everything", "project;user"} {
		_, err := ParseScope(in)
		if err == nil {
			t.Errorf("ParseScope(%q) succeeded, want error", in)
			continue
		}
		for _, tok := range []string{"--config", "plugin", "project, user, local"} {
			if !strings.Contains(err.Error(), tok) {
				t.Errorf("ParseScope(%q) error %q lacks %q", in, err, tok)
			}
		}
	}
	if !ScopeAll.Has(ScopeUser|ScopeLocal) || ScopeProject.Has(ScopeUser) || ScopeAll.Has(ScopeNone) {
		t.Errorf("Has is wrong")
	}
	if DefaultScope != ScopeProject {
		t.Errorf("DefaultScope = %v", DefaultScope)
	}
}

// fixture is a project directory, a home directory and an environment.
type fixture struct {
	project string
	home    string
	env     map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{project: filepath.Join(root, "project"), home: filepath.Join(root, "home"), env: map[string]string{}}
	for _, d := range []string{f.project, f.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) lookup(k string) (string, bool) {
	v, ok := f.env[k]
	return v, ok
}

func (f *fixture) opts(scope Scope) Options {
	return Options{Project: f.project, Scope: scope, Home: f.home, LookupEnv: f.lookup}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeProject writes <project>/.mcp.json with the given servers (JSON object text).
func (f *fixture) writeProject(t *testing.T, servers string) {
	t.Helper()
	writeFile(t, filepath.Join(f.project, ".mcp.json"), `{"mcpServers": `+servers+`}`)
}

func asConfigError(t *testing.T, err error) *ConfigError {
	t.Helper()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *ConfigError", err, err)
	}
	return ce
}

func TestRegistryFileRules(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, f *fixture) Options
		wantErr string
		check   func(t *testing.T, f *fixture, r *Registry)
	}{
		{name: "missing .mcp.json is an empty registry", setup: func(t *testing.T, f *fixture) Options {
			return f.opts(ScopeProject)
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			if r.Present || r.Disabled || len(r.Servers) != 0 {
				t.Errorf("registry = %+v", r)
			}
			want := []Source{{Kind: SourceProject, Path: filepath.Join(f.project, ".mcp.json")},
				{Kind: SourceBrokerOnly, Path: filepath.Join(f.project, ".repl-mcp", "mcp.json")}}
			if !reflect.DeepEqual(r.Sources, want) {
				t.Errorf("Sources = %+v", r.Sources)
			}
			if r.Provenance != (Provenance{Project: f.project, Registry: ProjectAndOptInScopes, Scope: "project"}) {
				t.Errorf("Provenance = %+v", r.Provenance)
			}
		}},
		{name: "empty mcpServers is present", setup: func(t *testing.T, f *fixture) Options {
			f.writeProject(t, `{}`)
			return f.opts(ScopeProject)
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			if !r.Present || len(r.Servers) != 0 || !r.Sources[0].Present {
				t.Errorf("registry = %+v", r)
			}
		}},
		{name: "explicit config absolute", setup: func(t *testing.T, f *fixture) Options {
			p := filepath.Join(f.home, "reg.json")
			writeFile(t, p, `{"mcpServers":{"a":{"command":"x"}}}`)
			f.writeProject(t, `{"b":{"command":"x"}}`) // ignored: --config is the only file
			o := f.opts(ScopeAll)
			o.ConfigPath = p
			return o
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			if !reflect.DeepEqual(r.Names(), []string{"a"}) || !r.Present {
				t.Errorf("names = %v", r.Names())
			}
			if r.Provenance.Registry != ExplicitConfig || r.Provenance.Scope != "all" {
				t.Errorf("Provenance = %+v", r.Provenance)
			}
			if e := r.Servers["a"]; e.Kind != SourceConfig || e.Cwd != f.home {
				t.Errorf("entry = %+v", e)
			}
		}},
		{name: "explicit config relative to project", setup: func(t *testing.T, f *fixture) Options {
			if err := os.Mkdir(filepath.Join(f.project, "cfg"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(f.project, "cfg", "r.json"), `{"mcpServers":{"a":{"command":"x","cwd":".."}}}`)
			o := f.opts(ScopeProject)
			o.ConfigPath = "cfg/r.json"
			return o
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			if e := r.Servers["a"]; e.Source != filepath.Join(f.project, "cfg", "r.json") || e.Cwd != f.project {
				t.Errorf("entry = %+v", e)
			}
		}},
		{name: "explicit config missing", setup: func(t *testing.T, f *fixture) Options {
			o := f.opts(ScopeProject)
			o.ConfigPath = "absent.json"
			return o
		}, wantErr: "Cannot read MCP registry file; check --config and file permissions"},
		{name: "explicit config unreadable", setup: func(t *testing.T, f *fixture) Options {
			// A path through a regular file cannot be opened, even by root.
			p := filepath.Join(f.project, "r.json")
			writeFile(t, p, `{"mcpServers":{}}`)
			o := f.opts(ScopeProject)
			o.ConfigPath = filepath.Join(p, "inner.json")
			return o
		}, wantErr: "Cannot read MCP registry file"},
		{name: "device", setup: func(t *testing.T, f *fixture) Options {
			o := f.opts(ScopeProject)
			o.ConfigPath = "/dev/null"
			return o
		}, wantErr: "MCP registry must be a regular file; FIFOs and devices are unsupported"},
		{name: "directory", setup: func(t *testing.T, f *fixture) Options {
			if err := os.Mkdir(filepath.Join(f.project, ".mcp.json"), 0o755); err != nil {
				t.Fatal(err)
			}
			return f.opts(ScopeProject)
		}, wantErr: "MCP registry must be a regular file"},
		{name: "exactly 1 MiB", setup: func(t *testing.T, f *fixture) Options {
			body := `{"mcpServers":{"a":{"command":"x"}}}`
			writeFile(t, filepath.Join(f.project, ".mcp.json"), body+strings.Repeat(" ", MaxFileBytes-len(body)))
			return f.opts(ScopeProject)
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			if len(r.Servers) != 1 {
				t.Errorf("servers = %v", r.Names())
			}
		}},
		{name: "1 MiB + 1", setup: func(t *testing.T, f *fixture) Options {
			body := `{"mcpServers":{"a":{"command":"x"}}}`
			writeFile(t, filepath.Join(f.project, ".mcp.json"), body+strings.Repeat(" ", MaxFileBytes+1-len(body)))
			return f.opts(ScopeProject)
		}, wantErr: "MCP registry exceeds the 1 MiB limit"},
		{name: "invalid JSON", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `{"mcpServers": {`)
			return f.opts(ScopeProject)
		}, wantErr: "MCP registry is invalid JSON; values are omitted from diagnostics"},
		{name: "trailing data", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `{"mcpServers": {}} x`)
			return f.opts(ScopeProject)
		}, wantErr: "MCP registry is invalid JSON"},
		{name: "top level array", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `[]`)
			return f.opts(ScopeProject)
		}, wantErr: "MCP registry is invalid JSON"},
		{name: "top level null", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `null`)
			return f.opts(ScopeProject)
		}, wantErr: "MCP registry is invalid JSON"},
		{name: "no mcpServers", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `{"servers":{}}`)
			return f.opts(ScopeProject)
		}, wantErr: "Project MCP registry requires mcpServers; check the registry format"},
		{name: "mcpServers not object", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `{"mcpServers":[]}`)
			return f.opts(ScopeProject)
		}, wantErr: "mcpServers must be an object"},
		{name: "mcpServers null", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `{"mcpServers":null}`)
			return f.opts(ScopeProject)
		}, wantErr: "mcpServers must be an object"},
		{name: "one bad entry invalidates all", setup: func(t *testing.T, f *fixture) Options {
			f.writeProject(t, `{"good":{"command":"x"},"bad":{"command":1}}`)
			return f.opts(ScopeProject)
		}, wantErr: "Invalid configuration for server bad"},
		{name: "disabled entry", setup: func(t *testing.T, f *fixture) Options {
			f.writeProject(t, `{"on":{"command":"x"},"off":{"command":1,"disabled":true}}`)
			return f.opts(ScopeProject)
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			want := map[string]Exclusion{"off": {Reason: ExcludedDisabled, Kind: SourceProject, Path: filepath.Join(f.project, ".mcp.json")}}
			if !reflect.DeepEqual(r.Names(), []string{"on"}) || !reflect.DeepEqual(r.Excluded, want) {
				t.Errorf("names %v excluded %v", r.Names(), r.Excluded)
			}
			if where := r.Excluded["off"].Where(); where != filepath.Join(f.project, ".mcp.json") {
				t.Errorf("Where() = %q, want the project's .mcp.json", where)
			}
		}},
		{name: "disabled entry still rejects unknown fields", setup: func(t *testing.T, f *fixture) Options {
			f.writeProject(t, `{"off":{"command":"x","disabled":true,"bogus":1}}`)
			return f.opts(ScopeProject)
		}, wantErr: `unknown field "bogus"`},
		{name: "no bridge ignores a broken registry", setup: func(t *testing.T, f *fixture) Options {
			writeFile(t, filepath.Join(f.project, ".mcp.json"), `{`)
			o := f.opts(ScopeAll)
			o.NoBridge = true
			o.Home = ""
			return o
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			if !r.Disabled || r.DisabledBy != DisabledByNoBridge || r.Present || len(r.Servers) != 0 || len(r.Sources) != 0 {
				t.Errorf("registry = %+v", r)
			}
		}},
		{name: "scope none", setup: func(t *testing.T, f *fixture) Options {
			f.writeProject(t, `{"a":{"command":"x"}}`)
			o := f.opts(ScopeNone)
			o.ConfigPath = "absent.json"
			return o
		}, check: func(t *testing.T, f *fixture, r *Registry) {
			if !r.Disabled || r.DisabledBy != DisabledByScope || len(r.Servers) != 0 || r.Provenance.Scope != "none" {
				t.Errorf("registry = %+v", r)
			}
		}},
		{name: "relative config without project", setup: func(t *testing.T, f *fixture) Options {
			return Options{ConfigPath: "r.json", Scope: ScopeProject}
		}, wantErr: "Cannot read MCP registry file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			reg, err := Load(tc.setup(t, f))
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Load succeeded, want %q", tc.wantErr)
				}
				if msg := asConfigError(t, err).Msg; !strings.Contains(msg, tc.wantErr) {
					t.Fatalf("error %q lacks %q", msg, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tc.check(t, f, reg)
		})
	}
}

// TestRegistryFIFO pins that a FIFO registry is refused at once instead of blocking
// on an open or a read that no writer will ever satisfy.
func TestRegistryFIFO(t *testing.T) {
	for _, explicit := range []bool{false, true} {
		f := newFixture(t)
		path := filepath.Join(f.project, ".mcp.json")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
		o := f.opts(ScopeProject)
		if explicit {
			o.ConfigPath = path
		}
		done := make(chan error, 1)
		go func() {
			_, err := Load(o)
			done <- err
		}()
		bound := 5 * time.Second
		if dl, ok := t.Deadline(); ok && time.Until(dl) < bound {
			bound = time.Until(dl) / 2
		}
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), msgRegNotRegular) {
				t.Errorf("explicit=%v: error %v, want %q", explicit, err, msgRegNotRegular)
			}
		case <-time.After(bound):
			// Unblock the stuck open or read so the goroutine can finish.
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("explicit=%v: Load blocked on a FIFO for %v", explicit, bound)
		}
	}
}

func TestForeignScopes(t *testing.T) {
	const claude = `{
	  "numStartups": 3,
	  "mcpServers": {
	    "granted": {"command":"user-tool","brokerAllowed":true},
	    "ungranted": {"url":"ftp://bad","headers":{"Authorization":"${MISSING}"},"bogus":1},
	    "stringgrant": {"command":"x","brokerAllowed":"true"},
	    "notobject": 5,
	    "clash": {"command":"user-cmd","brokerAllowed":true},
	    "off": {"command":"x","brokerAllowed":true,"disabled":true}
	  },
	  "projects": {
	    "PROJECT": {"mcpServers": {
	      "localgranted": {"url":"https://h/","brokerAllowed":true,"allowedTools":["t"]},
	      "localno": {"command":"x"}
	    }},
	    "/elsewhere": {"mcpServers": {"otherproject": {"command":"x","brokerAllowed":true}}}
	  }
	}`
	cases := []struct {
		scope    Scope
		names    []string
		excluded map[string]string
		clashCmd string
	}{
		{ScopeAll, []string{"clash", "granted", "localgranted"},
			map[string]string{"ungranted": ExcludedNotGranted, "stringgrant": ExcludedNotGranted, "notobject": ExcludedNotGranted, "off": ExcludedDisabled, "localno": ExcludedNotGranted},
			"project-cmd"},
		{ScopeUser, []string{"clash", "granted"},
			map[string]string{"ungranted": ExcludedNotGranted, "stringgrant": ExcludedNotGranted, "notobject": ExcludedNotGranted, "off": ExcludedDisabled},
			"user-cmd"},
		{ScopeLocal, []string{"localgranted"}, map[string]string{"localno": ExcludedNotGranted}, ""},
		{ScopeUser | ScopeProject, []string{"clash", "granted", "only-project"},
			map[string]string{"ungranted": ExcludedNotGranted, "stringgrant": ExcludedNotGranted, "notobject": ExcludedNotGranted, "off": ExcludedDisabled},
			"project-cmd"},
	}
	for _, tc := range cases {
		t.Run(tc.scope.String(), func(t *testing.T) {
			f := newFixture(t)
			writeFile(t, filepath.Join(f.home, ".claude.json"), strings.Replace(claude, "PROJECT", f.project, 1))
			f.writeProject(t, `{"clash":{"command":"project-cmd"},"only-project":{"command":"x"}}`)
			if tc.scope == ScopeAll {
				// Without brokerAllowed, a project entry is still granted.
				f.writeProject(t, `{"clash":{"command":"project-cmd"}}`)
			}
			reg, err := Load(f.opts(tc.scope))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(reg.Names(), tc.names) {
				t.Errorf("names = %v, want %v", reg.Names(), tc.names)
			}
			reasons := map[string]string{}
			for name, x := range reg.Excluded {
				reasons[name] = x.Reason
				// Where an exclusion comes from: the scope whose entry it was.
				wantKind := SourceUser
				if name == "localno" {
					wantKind = SourceLocal
				}
				if x.Kind != wantKind || x.Path != filepath.Join(f.home, ".claude.json") || !strings.Contains(x.Where(), "("+string(wantKind)+" scope") {
					t.Errorf("%s excluded by %+v (%s), want the %s scope of ~/.claude.json", name, x, x.Where(), wantKind)
				}
			}
			if !reflect.DeepEqual(reasons, tc.excluded) {
				t.Errorf("excluded = %v, want %v", reasons, tc.excluded)
			}
			if tc.clashCmd != "" && reg.Servers["clash"].Command != tc.clashCmd {
				t.Errorf("clash command = %q, want %q", reg.Servers["clash"].Command, tc.clashCmd)
			}
			if e, ok := reg.Servers["granted"]; ok && (e.Kind != SourceUser || e.Cwd != f.home) {
				t.Errorf("granted = %+v", e)
			}
			if e, ok := reg.Servers["localgranted"]; ok && (e.Kind != SourceLocal || !e.ToolAllowed("t") || e.ToolAllowed("u")) {
				t.Errorf("localgranted = %+v", e)
			}
			if !reg.Present || reg.Provenance.Scope != tc.scope.String() || reg.Provenance.Registry != ProjectAndOptInScopes {
				t.Errorf("present %v provenance %+v", reg.Present, reg.Provenance)
			}
		})
	}

	t.Run("granted entries are validated", func(t *testing.T) {
		f := newFixture(t)
		writeFile(t, filepath.Join(f.home, ".claude.json"), `{"mcpServers":{"g":{"command":"x","brokerAllowed":true,"bogus":1}}}`)
		_, err := Load(f.opts(ScopeUser))
		if err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("missing HOME", func(t *testing.T) {
		for _, s := range []Scope{ScopeUser, ScopeLocal, ScopeAll} {
			f := newFixture(t)
			o := f.opts(s)
			o.Home = ""
			_, err := Load(o)
			if err == nil || asConfigError(t, err).Msg != msgRegHomeMissing {
				t.Errorf("scope %v: error = %v", s, err)
			}
		}
		f := newFixture(t)
		o := f.opts(ScopeProject)
		o.Home = ""
		if _, err := Load(o); err != nil {
			t.Errorf("project scope needs no HOME: %v", err)
		}
	})
	t.Run("absent claude.json", func(t *testing.T) {
		f := newFixture(t)
		reg, err := Load(f.opts(ScopeUser | ScopeLocal))
		if err != nil {
			t.Fatal(err)
		}
		if reg.Present || len(reg.Servers) != 0 || len(reg.Sources) != 2 || reg.Sources[0].Present {
			t.Errorf("registry = %+v", reg)
		}
	})
	t.Run("claude.json without servers", func(t *testing.T) {
		f := newFixture(t)
		writeFile(t, filepath.Join(f.home, ".claude.json"), `{"projects":{}}`)
		reg, err := Load(f.opts(ScopeUser | ScopeLocal))
		if err != nil || !reg.Present || len(reg.Servers) != 0 {
			t.Fatalf("registry = %+v, %v", reg, err)
		}
	})
	t.Run("claude.json shape errors", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"mcpServers":[]}`:                           "mcpServers must be an object",
			`{"projects":[]}`:                             "projects must be an object",
			`{"projects":{"PROJECT":1}}`:                  "the project entry must be an object",
			`{"projects":{"PROJECT":{"mcpServers":"x"}}}`: "the project's mcpServers must be an object",
			`{`: msgRegInvalidJSON,
		} {
			f := newFixture(t)
			writeFile(t, filepath.Join(f.home, ".claude.json"), strings.Replace(body, "PROJECT", f.project, 1))
			_, err := Load(f.opts(ScopeUser | ScopeLocal))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error = %v, want %q", body, err, want)
			}
		}
	})
}

func TestSelfLaunchDropped(t *testing.T) {
	f := newFixture(t)
	bin := filepath.Join(f.project, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, "server-binary")
	writeFile(t, self, "#!/bin/sh\n")
	if err := os.Chmod(self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(f.home, "alias")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(bin, "other-binary")
	writeFile(t, other, "#!/bin/sh\n")
	if err := os.Chmod(other, 0o755); err != nil {
		t.Fatal(err)
	}
	f.env["PATH"] = "/nonexistent:" + bin
	f.env["SELF"] = self
	dropped := map[string]string{
		"bare":       `{"command":"repl-mcp"}`,
		"exe":        `{"command":"/usr/local/bin/repl-mcp.exe","args":["--mcp-scope","none"]}`,
		"module":     `{"command":"python3","args":["-u","-m","repl_mcp"]}`,
		"submodule":  `{"command":"/usr/bin/python","args":["-m","repl_mcp.repl_mcp_server"]}`,
		"uvx":        `{"command":"uvx","args":["--from","x.whl","repl-mcp"]}`,
		"uv":         `{"command":"/opt/uv","args":["tool","run","repl-mcp"]}`,
		"absolute":   `{"command":"${SELF}"}`,
		"symlink":    `{"command":"` + filepath.Join(f.home, "alias") + `"}`,
		"path":       `{"command":"server-binary"}`,
		"relative":   `{"command":"./bin/server-binary"}`,
		"alias-same": `{"command":"repl-mcp","allowedTools":["x"]}`,
	}
	kept := map[string]string{
		"fixture":     `{"command":"/tmp/repl_mcp_fixture/server","args":["repl_mcp"]}`,
		"other-mod":   `{"command":"python3","args":["-m","repl_mcp_fixture"]}`,
		"uvx-other":   `{"command":"uvx","args":["some-server"]}`,
		"node":        `{"command":"node","args":["repl-mcp"]}`,
		"other-bin":   `{"command":"other-binary"}`,
		"http":        `{"url":"https://h/repl-mcp"}`,
		"missing-bin": `{"command":"./bin/absent"}`,
	}
	var parts []string
	for n, e := range dropped {
		parts = append(parts, `"`+n+`":`+e)
	}
	for n, e := range kept {
		parts = append(parts, `"`+n+`":`+e)
	}
	f.writeProject(t, "{"+strings.Join(parts, ",")+"}")
	o := f.opts(ScopeProject)
	o.SelfExecutables = []string{"/nonexistent/self", self}
	reg, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if reg.SelfExcluded != len(dropped) {
		t.Errorf("SelfExcluded = %d, want %d", reg.SelfExcluded, len(dropped))
	}
	for n := range dropped {
		if _, ok := reg.Servers[n]; ok {
			t.Errorf("%s not dropped", n)
		}
		if _, ok := reg.Excluded[n]; ok {
			t.Errorf("%s dropped silently must not be listed as excluded", n)
		}
	}
	for n := range kept {
		if _, ok := reg.Servers[n]; !ok {
			t.Errorf("%s dropped", n)
		}
	}
}

func TestFingerprint(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(filepath.Join(f.project, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.writeProject(t, `{
	  "a": {"command":"srv","args":["1"],"env":{"X":"1","Y":"2"}},
	  "b": {"type":"stdio","command":"srv","args":["1"],"env":{"Y":"2","X":"1"},"allowedTools":["t"],"brokerAllowed":true},
	  "c": {"command":"srv","args":["1"],"env":{"X":"1","Y":"3"}},
	  "d": {"command":"srv","args":["1"],"env":{"X":"1","Y":"2"},"cwd":"sub"},
	  "e": {"command":"srv","args":["1","2"],"env":{"X":"1","Y":"2"}},
	  "f": {"command":"srv","args":["1"],"env":{"X":"1","Y":"2"},"cwd":"."},
	  "h1": {"url":"https://h/","headers":{"X-K":"v"}},
	  "h2": {"type":"streamable-http","url":"https://h/","headers":{"x-k":"v"},"allowedTools":[]},
	  "h3": {"url":"https://h/","headers":{"X-K":"w"}},
	  "h4": {"url":"https://h/","oauth":{"credentialFile":"c.json"}}
	}`)
	reg, err := Load(f.opts(ScopeProject))
	if err != nil {
		t.Fatal(err)
	}
	fp := func(n string) string { return reg.Servers[n].Fingerprint }
	for _, same := range [][2]string{{"a", "b"}, {"a", "f"}, {"h1", "h2"}} {
		if fp(same[0]) != fp(same[1]) {
			t.Errorf("%s and %s must share a transport", same[0], same[1])
		}
	}
	for _, diff := range [][2]string{{"a", "c"}, {"a", "d"}, {"a", "e"}, {"h1", "h3"}, {"h1", "h4"}} {
		if fp(diff[0]) == fp(diff[1]) {
			t.Errorf("%s and %s must not share a transport", diff[0], diff[1])
		}
	}
}

// TestSecretsNeverEchoed plants a recognizable secret in every place a registry can
// hold one and asserts that no error message carries it.
func TestSecretsNeverEchoed(t *testing.T) {
	const secret = "S3CR3T-planted-7f3a91"
	env := map[string]string{
		"TOKEN":     secret,
		"TOKEN_NL":  secret + "\r\nX-Injected: 1",
		"TOKEN_NUL": secret + "\x00",
		"URL_CRED":  "https://user:" + secret + "@h/",
	}
	entries := []string{
		`{"command":"x","bogus":"` + secret + `"}`,
		`{"command":["` + secret + `"]}`,
		`{"command":"x","args":[1,"` + secret + `"]}`,
		`{"command":"x","env":{"K":"${TOKEN_NUL}"}}`,
		`{"command":"x","env":{"K":"` + secret + `","L":"${MISSING}"}}`,
		`{"command":"x","env":{"K=` + secret + `":"v"}}`,
		`{"command":"x","cwd":"/nonexistent/` + secret + `"}`,
		`{"command":"x","url":"https://h/` + secret + `"}`,
		`{"type":"` + secret + `","command":"x"}`,
		`{"url":"${URL_CRED}"}`,
		`{"url":"https://user:` + secret + `@h/"}`,
		`{"url":"ftp://` + secret + `/"}`,
		`{"url":"https://h/","headers":{"X-K":"${TOKEN_NL}"}}`,
		`{"url":"https://h/","headers":{"X-K":"` + secret + `\n"}}`,
		`{"url":"https://h/","headers":{"Accept":"` + secret + `"}}`,
		`{"url":"https://h/","headers":{"X-K":"` + secret + `","X-L":"${MISSING}"}}`,
		`{"url":"https://h/","headers":{"bad name ` + secret + `":"v"}}`,
		`{"url":"https://h/","headers":{"Authorization":"Bearer ${TOKEN}"},"oauth":{"credentialFile":"c"}}`,
		`{"url":"https://h/","headers":{"Authorization":"Bearer ` + secret + `","X-A":"1","x-a":"2"}}`,
		`{"url":"https://h/","oauth":{"grantType":"` + secret + `"}}`,
		`{"url":"https://h/","oauth":{"clientSecret":"${TOKEN}"}}`,
		`{"url":"https://h/","oauth":{"grantType":"client_credentials","clientSecret":"` + secret + `"}}`,
		`{"url":"https://h/","oauth":{"credentialFile":"c","redirectPort":"` + secret + `"}}`,
		`{"url":"https://h/","oauth":{"credentialFile":"c","scopes":["` + secret + ` x"]}}`,
		`{"command":"x","allowedTools":["` + secret + `\u0001"]}`,
		`{"command":"x","disabled":"` + secret + `"}`,
		`{"command":"${` + secret + `"}`,
		`"` + secret + `"`,
	}
	files := []string{
		`{"mcpServers": {"s": {"command": "` + secret + `" ,, }}}`,
		`{"mcpServers": "` + secret + `"}`,
		`["` + secret + `"]`,
		`{"mcpServers": {"s` + secret + `\u0001": {"command":"x"}}}`,
	}
	for _, e := range entries {
		files = append(files, `{"mcpServers": {"s": `+e+`}}`)
	}
	for i, body := range files {
		f := newFixture(t)
		f.env = env
		writeFile(t, filepath.Join(f.project, ".mcp.json"), body)
		reg, err := Load(f.opts(ScopeProject))
		if err == nil {
			t.Errorf("case %d succeeded (%v), want an error: %s", i, reg.Names(), body)
			continue
		}
		msg := asConfigError(t, err).Msg
		if strings.Contains(msg, secret) || strings.Contains(msg, "7f3a91") {
			t.Errorf("case %d leaks the secret: %q", i, msg)
		}
	}

	// A valid registry holding the secret: the fingerprint must not expose it either.
	f := newFixture(t)
	f.env = env
	f.writeProject(t, `{"s":{"url":"https://h/","headers":{"Authorization":"Bearer ${TOKEN}"}}}`)
	reg, err := Load(f.opts(ScopeProject))
	if err != nil {
		t.Fatal(err)
	}
	if e := reg.Servers["s"]; e.Headers["Authorization"] != "Bearer "+secret || strings.Contains(e.Fingerprint, secret) {
		t.Errorf("entry = %q / %q", e.Headers, e.Fingerprint)
	}
	prov, _ := json.Marshal(reg.Provenance)
	if strings.Contains(string(prov), secret) {
		t.Errorf("provenance leaks the secret")
	}
}

func TestOptionsProvenance(t *testing.T) {
	o := Options{Project: "/p", Scope: ScopeProject | ScopeLocal}
	if got := o.Provenance(); got != (Provenance{Project: "/p", Registry: ProjectAndOptInScopes, Scope: "project,local"}) {
		t.Errorf("Provenance = %+v", got)
	}
	o.ConfigPath = "r.json"
	b, _ := json.Marshal(o.Provenance())
	if string(b) != `{"project":"/p","registry":"explicit_config","scope":"project,local"}` {
		t.Errorf("Provenance JSON = %s", b)
	}
}
