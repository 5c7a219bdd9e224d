package interop

// Gemini CLI and opencode in the model-view suite (modelview_test.go): each runs
// the same script as Claude Code and Codex, offline, in a network namespace of its
// own, against a fake model API of the suite's own (fakegemini_test.go,
// fakechat_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// The agent CLIs, pinned in package.json: Gemini CLI's package, and the two
// binaries of opencode 1.18.33 that its own package (opencode-ai) chooses between
// on Linux x86_64.
const (
	geminiPackage   = "@google/gemini-cli"
	opencodePackage = "opencode-linux-x64"
	opencodeVersion = "1.18.33"
)

// geminiModel is the model Gemini CLI is told to use: named, so that Gemini CLI's
// routing classifier (which asks another model first) does not run; it is the one
// its "auto" setting falls back to.
const geminiModel = "gemini-3.1-pro-preview"

var (
	// Gemini CLI turns an isError result into one line quoting it as JSON, so
	// repl-mcp sends its failures unflagged (server.unflaggedClient): its model reads
	// the text, whose footer says `failed`.
	gemini   = agentKind{name: "Gemini"}
	opencode = agentKind{name: "Opencode", join: "\n\n"}
)

// runGemini runs Gemini CLI in headless mode (-p) against the fake Gemini API, with
// the model-view servers in a scratch HOME's settings, every tool call approved
// (--approval-mode yolo), the project folder trusted (GEMINI_CLI_TRUST_WORKSPACE),
// and its telemetry, usage statistics and update checks off.
func runGemini(t *testing.T, s *suite, python string, steps []step) *agentRun {
	s.checkNpmPackage(t, geminiPackage)
	entry := s.path("node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	return runAgent(t, agentSetup{
		kind:    gemini,
		handler: func(m *fakeModel) http.Handler { return geminiAPI{m} },
		command: func(ctx context.Context, port int, scratch, marker string) (*exec.Cmd, error) {
			home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
			if err := mkdirs(filepath.Join(home, ".gemini"), project); err != nil {
				return nil, err
			}
			servers := map[string]any{}
			for name, srv := range s.agentServers(python, marker) {
				entry := map[string]any{"command": srv.command, "args": srv.args, "env": srv.env}
				if name == "longrepl" {
					entry["timeout"] = longToolTimeout * 1000
				}
				servers[name] = entry
			}
			settings := map[string]any{
				"mcpServers": servers,
				"security":   map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
				"telemetry":  map[string]any{"enabled": false},
				"privacy":    map[string]any{"usageStatisticsEnabled": false},
				"general":    map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
			}
			if err := writeJSONFile(filepath.Join(home, ".gemini", "settings.json"), settings); err != nil {
				return nil, err
			}
			cmd := exec.CommandContext(ctx, s.node, entry, "-p", modelViewPrompt, "-m", geminiModel,
				"--approval-mode", "yolo", "--output-format", "stream-json")
			cmd.Dir = project
			cmd.Env = agentEnv(home,
				"GEMINI_API_KEY=dummy",
				"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:"+strconv.Itoa(port),
				"GEMINI_CLI_TRUST_WORKSPACE=true",
				"GEMINI_TELEMETRY_ENABLED=false",
			)
			return cmd, nil
		},
	}, steps)
}

// runOpencode runs `opencode run` against the fake Chat Completions API, as an
// OpenAI-compatible provider whose baseURL is the fake, with the model-view servers,
// all given in OPENCODE_CONFIG_CONTENT, and its update checks, models.dev fetch,
// sharing, LSP downloads and default plugins off.
func runOpencode(t *testing.T, s *suite, python string, steps []step) *agentRun {
	bin := s.opencodeBinary(t)
	return runAgent(t, agentSetup{
		kind:    opencode,
		handler: func(m *fakeModel) http.Handler { return chatAPI{m} },
		command: func(ctx context.Context, port int, scratch, marker string) (*exec.Cmd, error) {
			home, project := filepath.Join(scratch, "home"), filepath.Join(scratch, "project")
			if err := mkdirs(home, project); err != nil {
				return nil, err
			}
			mcp := map[string]any{}
			for name, srv := range s.agentServers(python, marker) {
				entry := map[string]any{"type": "local", "command": append([]string{srv.command}, srv.args...), "environment": srv.env, "enabled": true}
				if name == "longrepl" {
					entry["timeout"] = longToolTimeout * 1000
				}
				mcp[name] = entry
			}
			config := map[string]any{
				"$schema":    "https://opencode.ai/config.json",
				"model":      "modelview/fake",
				"autoupdate": false,
				"share":      "disabled",
				"provider": map[string]any{"modelview": map[string]any{
					"npm":     "@ai-sdk/openai-compatible",
					"name":    "repl-mcp model-view fake",
					"options": map[string]any{"baseURL": fmt.Sprintf("http://127.0.0.1:%d/v1", port), "apiKey": "dummy"},
					"models": map[string]any{"fake": map[string]any{"name": "fake", "tool_call": true, "attachment": true,
						"modalities": map[string]any{"input": []string{"text", "image"}, "output": []string{"text"}}}},
				}},
				"mcp": mcp,
			}
			content, err := jsonString(config)
			if err != nil {
				return nil, err
			}
			cmd := exec.CommandContext(ctx, bin, "run", "--format", "json", modelViewPrompt)
			cmd.Dir = project
			cmd.Env = agentEnv(home,
				"OPENCODE_CONFIG_CONTENT="+content,
				"OPENCODE_DISABLE_AUTOUPDATE=1",
				"OPENCODE_DISABLE_MODELS_FETCH=1",
				"OPENCODE_DISABLE_SHARE=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
				"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
				"OPENCODE_DISABLE_CLAUDE_CODE=1",
			)
			return cmd, nil
		},
	}, steps)
}

// opencodeBinary is the opencode binary opencode-ai's postinstall would pick: the
// AVX2 build where the CPU has AVX2, else the baseline one.
func (s *suite) opencodeBinary(t *testing.T) string {
	t.Helper()
	pkg := opencodePackage
	if cpu, err := os.ReadFile("/proc/cpuinfo"); err == nil && !avx2.Match(cpu) {
		pkg += "-baseline"
	}
	var installed struct {
		Version string `json:"version"`
	}
	readJSON(t, s.path("node_modules", pkg, "package.json"), &installed)
	if installed.Version != opencodeVersion {
		t.Fatalf("interop/node_modules has %s %q, not %s: %s", pkg, installed.Version, opencodeVersion, setupStep)
	}
	return s.path("node_modules", pkg, "bin", "opencode")
}

var avx2 = regexp.MustCompile(`(?m)^flags\s*:.*\bavx2\b`)

// jsonString is v as compact JSON.
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
